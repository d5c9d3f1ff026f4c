// Renders PPSF with @huggingface/jinja (the engine of transformers.js), one JSON request per line:
// {"template": str, "context": {...}} -> {"text": str} or {"error": str}.
import { Template } from "@huggingface/jinja";
import { createInterface } from "node:readline";

const compiled = new Map();
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const { template, context } = JSON.parse(line);
  let reply;
  try {
    if (!compiled.has(template)) compiled.set(template, new Template(template));
    reply = { text: compiled.get(template).render(context) };
  } catch (e) {
    reply = { error: String(e.message) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
