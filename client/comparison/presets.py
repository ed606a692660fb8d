"""Presets: one comparison config per experiment of the papers, shipped as ``client/comparison/presets/<name>.toml``."""

from __future__ import annotations

from pathlib import Path

from client.comparison.config import CompareConfig, load_config, quick_config
from client.comparison.config_errors import unknown

PRESET_DIR = Path(__file__).with_name("presets")


class UnknownPreset(ValueError):
    pass


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def load_preset(name: str, *, quick: bool = False) -> CompareConfig:
    path = PRESET_DIR / f"{name}.toml"
    if not path.is_file():
        raise UnknownPreset(unknown("unknown preset", name, preset_names(), f"presets: {', '.join(preset_names())}"))
    config = load_config(path)
    return quick_config(config) if quick else config


def presets() -> dict[str, CompareConfig]:
    return {name: load_preset(name) for name in preset_names()}
