"""training/interpolate_adapter.py: WiSE-FT between two LoRA stages."""

from __future__ import annotations

import json
from pathlib import Path

import card
import torch


def _continued(start: Path, end: Path, shift: float = 0.5) -> dict[str, torch.Tensor]:
    """A hand-made END for START: its tensors moved by `shift`, its training_info naming START as its init."""
    from safetensors.torch import load_file, save_file

    end.mkdir()
    tensors = {k: (v.float() + shift).to(v.dtype) for k, v in load_file(start / "adapter_model.safetensors").items()}
    save_file(tensors, str(end / "adapter_model.safetensors"))
    (end / "adapter_config.json").write_bytes((start / "adapter_config.json").read_bytes())
    start_info = json.loads((start / "training_info.json").read_text(encoding="utf-8"))
    info = start_info | {"steps": 4, "schedule_steps": 4, "lr": 0.0003}
    info["init_adapter"] = {"path": str(start), "training_info": start_info}
    (end / "training_info.json").write_text(json.dumps(info), encoding="utf-8")
    return tensors


def test_interpolation_mixes_every_lora_tensor_and_the_card_gives_the_command(tmp_path, tiny_model_dir, tiny_adapter):
    import interpolate_adapter
    from safetensors.torch import load_file

    from agent.engine.models import load_model

    start, end = tiny_adapter[0], tmp_path / "end"
    end_tensors = _continued(start, end)
    start_tensors = load_file(start / "adapter_model.safetensors")
    for weight in (0.0, 0.25, 1.0):
        out = tmp_path / f"mix{weight}"
        assert interpolate_adapter.main([str(start), str(end), "--weight", str(weight), "--out", str(out)]) == 0
        mixed = load_file(out / "adapter_model.safetensors")
        assert mixed.keys() == start_tensors.keys()
        for k, a in start_tensors.items():
            expected = ((1 - weight) * a.float() + weight * end_tensors[k].float()).to(a.dtype)
            assert mixed[k].dtype == a.dtype and torch.equal(mixed[k], expected), k
    info = json.loads((out / "training_info.json").read_text(encoding="utf-8"))
    assert info["interpolation"] == {"weight": 1.0} and info["steps"] == 4  # END's record, plus the weight
    text = (tmp_path / "mix0.25" / "README.md").read_text(encoding="utf-8")
    assert "--lr 0.0003 --max-steps 4" in text and "--out runs/stage2/\n" in text  # stage 2 is not the adapter
    assert "interpolate_adapter.py runs/stage1/ runs/stage2/ --weight 0.25 --out adapter/" in text
    assert "0.75 x the stage-1\nadapter + 0.25 x stage 2" in text
    # a later stage continues the interpolated adapter, which its card then reproduces under runs/
    third = {"steps": 3, "schedule_steps": 3, "lr": 0.0002, "init_adapter": {"path": "a", "training_info": info}}
    text = card.write_card(tmp_path, third).read_text(encoding="utf-8")
    assert "interpolate_adapter.py runs/stage1/ runs/stage2/ --weight 1.0 --out runs/stage2-wise-ft/" in text
    assert "--init-adapter runs/stage2-wise-ft/ \\\n    --lr 0.0002 --max-steps 3 --out adapter/" in text
    base, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter="none")
    tuned, _ = load_model(str(tiny_model_dir), device="cpu", dtype="float32", adapter=str(tmp_path / "mix0.25"))
    assert any(not torch.equal(a, b) for a, b in zip(base.parameters(), tuned.parameters(), strict=True))


def test_interpolation_errors_name_the_problem(tmp_path, capsys, tiny_adapter):
    import interpolate_adapter
    from safetensors.torch import load_file, save_file

    start, end = tiny_adapter[0], tmp_path / "end"
    _continued(start, end)
    out = tmp_path / "o"

    def error(a: Path, b: Path, weight: str = "0.5", to: Path = out) -> str:
        assert interpolate_adapter.main([str(a), str(b), "--weight", weight, "--out", str(to)]) == 2
        return capsys.readouterr().err

    assert "--weight 1.5: must be in [0, 1]" in error(start, end, "1.5")
    assert "is START or END" in error(start, end, to=end)
    assert "was not trained from START" in error(end, start)  # the wrong way round
    assert "no adapter_config.json, adapter_model.safetensors, training_info.json" in error(start, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    for name in interpolate_adapter.ADAPTER_FILES:
        (other / name).write_bytes((end / name).read_bytes())
    config = json.loads((other / "adapter_config.json").read_text(encoding="utf-8"))
    (other / "adapter_config.json").write_text(json.dumps(config | {"lora_alpha": 8, "r": 8}), encoding="utf-8")
    assert "configs differ in lora_alpha, r" in error(start, other)
    # peft saves target_modules (a set) in any order: the same modules in another order are the same config
    shuffled = config | {"target_modules": config["target_modules"][::-1]}
    (other / "adapter_config.json").write_text(json.dumps(shuffled), encoding="utf-8")
    tensors = load_file(end / "adapter_model.safetensors")
    key = min(tensors)
    save_file({k: v for k, v in tensors.items() if k != key}, str(other / "adapter_model.safetensors"))
    assert f"{key} is only in START" in error(start, other)
    save_file(tensors | {key: tensors[key][:1].contiguous()}, str(other / "adapter_model.safetensors"))
    shape = f"{key}: {tuple(tensors[key].shape)} torch.bfloat16 in START, {(1, *tensors[key].shape[1:])}"
    assert shape in error(start, other)
    save_file(tensors | {key: tensors[key].float()}, str(other / "adapter_model.safetensors"))
    assert "torch.float32 in END" in error(start, other)
    assert not out.exists()  # nothing written on an error
    save_file(tensors, str(other / "adapter_model.safetensors"))
    assert interpolate_adapter.main([str(start), str(other), "--weight", "0.5", "--out", str(out)]) == 0
    assert "is itself an interpolation" in error(start, out, to=tmp_path / "o2")  # its weight would be lost
