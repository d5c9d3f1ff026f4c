"""The adapter card card.write_card writes: every stage and the commands that reproduce it."""

from __future__ import annotations

import card


def test_adapter_card_gives_every_stage_and_the_commands_that_reproduce_them(tmp_path):
    stage1 = {"conversations": 600, "conversations_seen": 340, "steps": 170, "schedule_steps": 170, "lr": 0.001}
    stage1 |= {"tokens": 10, "loss_tokens": 3, "first_loss": 1.19108, "last_loss": 0.04265, "wall_seconds": 4684.2}
    info = {"conversations": 600, "conversations_seen": 240, "steps": 120, "schedule_steps": 130, "lr": 0.0005}
    info |= {"tokens": 20, "loss_tokens": 5, "init_adapter": {"path": "adapter", "training_info": stage1}}
    text = card.write_card(tmp_path, info).read_text(encoding="utf-8")
    assert "saw 340 of them" in text and "saw 240 of them" in text and "--extended" in text
    assert "Stage 1: lr 0.001 cosine" in text and "170 steps (" in text and "loss 1.1911 -> 0.0427" in text
    assert "Stage 2, from the stage-1 adapter: lr 0.0005" in text and "120 of 130 scheduled steps" in text
    assert "--init-adapter runs/stage1/" in text and "--lr 0.0005 --max-steps 130 --stop-at-step 120" in text
    weights = "python training/generate_data.py --extended --weights refusal=10"
    third = {"steps": 90, "schedule_steps": 120, "lr": 0.0004, "data_command": weights, "conversations_seen": 180}
    third |= {"init_adapter": {"path": "adapter", "training_info": info}}
    text = card.write_card(tmp_path, third).read_text(encoding="utf-8")
    assert "Stage 2, from the stage-1 adapter: lr 0.0005" in text and "saw 180 of them" in text
    assert "Stage 3: `training/generate_data.py --extended --weights refusal=10`" in text and "reweighted" in text
    assert "Stage 3, from the stage-2 adapter: lr 0.0004" in text and "90 of 120 scheduled steps" in text
    assert f"{weights} --out training/data/stage3.jsonl" in text and "--out runs/stage2/" in text
    assert "--init-adapter runs/stage2/ \\\n    --lr 0.0004 --max-steps 120 --stop-at-step 90 --out adapter/" in text
    plain = third | {"data_command": "python training/generate_data.py --seed 4"}
    assert "--seed 4`, " in card.write_card(tmp_path, plain).read_text(encoding="utf-8")
    one = card.write_card(tmp_path, stage1).read_text(encoding="utf-8")
    assert "Stage" not in one and "Run: lr 0.001 cosine" in one and "train_lora.py --out adapter/" in one


def test_the_card_gives_a_gpu_stage_its_flags_and_its_device(tmp_path):
    stage1 = {"steps": 170, "schedule_steps": 170, "lr": 0.001, "wall_seconds": 4684.2, "device": "cpu"}
    gpu = {"steps": 375, "schedule_steps": 375, "lr": 0.0003, "batch_size": 8, "grad_accum": 1, "warmup_steps": 10}
    gpu |= {"device": "cuda", "gpu": "NVIDIA H200", "train_seconds": 272.2, "wall_seconds": 300.1, "bf16": True}
    gpu |= {"init_adapter": {"path": "adapter", "training_info": stage1}}
    text = card.write_card(tmp_path, gpu).read_text(encoding="utf-8")
    flags = "--batch-size 8 --grad-accum 1 --warmup-steps 10 --device cuda --bf16"
    assert f"--lr 0.0003 --max-steps 375 {flags} --out adapter/" in text  # it ran its whole schedule
    assert "272.2 s of training (300.1 s in all) on one NVIDIA H200" in text
    assert "wall time 4684.2 s on a shared 2-core CPU" in text  # stage 1 keeps its CPU wording


def test_the_card_names_a_cpu_runs_precision_whose_default_follows_the_cpu(tmp_path):
    stage1 = {"steps": 170, "schedule_steps": 170, "lr": 0.001, "device": "cpu", "bf16": True}
    fp32 = {"steps": 70, "schedule_steps": 72, "lr": 0.0003, "device": "cpu", "bf16": False}
    fp32 |= {"init_adapter": {"path": "adapter", "training_info": stage1}}
    text = card.write_card(tmp_path, fp32).read_text(encoding="utf-8")
    assert "train_lora.py --bf16 --out runs/stage1/" in text
    assert "--lr 0.0003 --max-steps 72 --stop-at-step 70 --no-bf16 --out adapter/" in text
    assert "bf16 autocast on cpu" in text and "fp32 on cpu" in text


def test_the_card_reads_what_a_stage_adds_from_its_data_command():
    gen = "python training/generate_data.py"
    assert "round 1 of the further" in card._stage_note(f"{gen} --extended --more-phrasings --weights a=1")
    assert "rounds 1-2 of the further" in card._stage_note(f"{gen} --extended --more-phrasings 2")
    assert card._stage_note(f"{gen} --extended --weights a=1").startswith("the previous stage's recipe with")
    assert "openers" in card._stage_note(f"{gen} --extended")
    assert card._stage_note(f"{gen} --seed 4") == "the data that command writes."
    same = f"{gen} --extended --more-phrasings 5 --weights a=1"
    larger = f"{gen} --train 3000 --extended --more-phrasings 5 --weights a="
    again = card._stage_note(larger + "1", same)
    assert again == "the previous stage's recipe and mix again, 3000 new conversations drawn from it."
    assert "reweighted" in card._stage_note(larger + "2", same)  # another mix is not "again"
