"""The SDK's build backend (PEP 517), in the repository and on the standard
library alone: `pip install ./sdk/python` needs nothing from a package
index to build it. It makes a pure-Python wheel of the `sluice` package and
an sdist of the project, with metadata from pyproject.toml."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sluice"


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _dist_name(project: dict) -> str:
    return project["name"].replace("-", "_")


def _metadata(project: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"License: {project.get('license', {}).get('text', '')}",
        f"Requires-Python: {project.get('requires-python', '')}",
    ]
    lines += [f"Requires-Dist: {dependency}" for dependency in project.get("dependencies", [])]
    for extra, dependencies in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {dependency}; extra == "{extra}"' for dependency in dependencies]
    readme = project.get("readme")
    text = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        text = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + text


def _package_files() -> list[Path]:
    files = []
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            files.append(path)
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> list[str]:
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    project = _project()
    name = f"{_dist_name(project)}-{project['version']}"
    wheel = f"{name}-py3-none-any.whl"
    dist_info = f"{name}.dist-info"
    entries: list[tuple[str, bytes]] = []
    for path in _package_files():
        entries.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    entries.append((f"{dist_info}/METADATA", _metadata(project).encode()))
    generator = "Wheel-Version: 1.0\nGenerator: sluice_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries.append((f"{dist_info}/WHEEL", generator.encode()))
    record = [_record_line(entry, data) for entry, data in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as archive:
        for entry, data in entries:
            # Fixed times: the same source makes the same wheel.
            info = zipfile.ZipInfo(entry, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel


def build_sdist(sdist_directory, config_settings=None) -> str:
    project = _project()
    name = f"{_dist_name(project)}-{project['version']}"
    sdist = f"{name}.tar.gz"
    sources = [ROOT / "pyproject.toml", ROOT / project.get("readme", "README.md"), Path(__file__)]
    sources += _package_files()
    with tarfile.open(os.path.join(sdist_directory, sdist), "w:gz") as archive:
        for path in sources:
            archive.add(path, arcname=f"{name}/{path.relative_to(ROOT).as_posix()}", recursive=False)
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        metadata = _metadata(project).encode()
        info.size = len(metadata)
        archive.addfile(info, io.BytesIO(metadata))
    return sdist
