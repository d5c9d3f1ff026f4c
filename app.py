"""The PPSF pharmacist as a Gradio chat: `python app.py` (a Hugging Face Space runs this file).

See agent/web.py; `python app.py --help` for the model, backend and address options.
"""

from agent.web import main

if __name__ == "__main__":
    raise SystemExit(main())
