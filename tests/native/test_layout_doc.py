"""native/README.md's Layout block names exactly what flexdelegate/native holds, and every folder
has a short README: the map a newcomer reads first cannot drift from the tree again."""
import re
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[2] / "flexdelegate" / "native"
FOLDER_DOCS = {"README.md", "NOTES.md"}  # each folder's own docs, never listed in the map
FILE_TOKEN = re.compile(r"\b(\w[\w.-]*\.(?:c|h|inc|md|py))\b")
DIR_TOKEN = re.compile(r"(?<![\w./])([a-z][\w-]*)/")


def layout_sections():
    """{entry: text}: an entry starts at column 0 of the README's first code block, its text runs
    over the indented lines below it."""
    block = (NATIVE / "README.md").read_text().split("```")[1]
    sections, name = {}, None
    for line in block.strip("\n").splitlines():
        if line[:1].strip():
            name, _, rest = line.partition(" ")
            sections[name] = rest
        else:
            sections[name] += " " + line.strip()
    return sections


def entries(folder):
    """The folder's files (but its docs) and its subfolders, as the map spells them."""
    out = set()
    for p in folder.iterdir():
        if p.is_dir() and p.name != "__pycache__":
            out.add(p.name + "/")
        elif p.is_file() and p.name not in FOLDER_DOCS:
            out.add(p.name)
    return out


def named(text):
    return set(FILE_TOKEN.findall(text)) | {d + "/" for d in DIR_TOKEN.findall(text)}


def test_layout_lists_every_top_level_entry():
    assert set(layout_sections()) == entries(NATIVE)


def test_layout_lists_every_file_and_subfolder_of_each_folder():
    for name, text in layout_sections().items():
        if name.endswith("/"):
            assert named(text) == entries(NATIVE / name), name


def test_every_folder_has_a_short_readme():
    folders = {p.parent for p in NATIVE.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    for folder in sorted(folders - {NATIVE}):
        readme = folder / "README.md"
        assert readme.is_file(), f"{folder.relative_to(NATIVE)} has no README.md"
        lines = readme.read_text().strip().splitlines()
        assert lines[0].startswith("# "), readme
        body = [line for line in lines[1:] if line.strip()]
        assert 3 <= len(body) <= 6, f"{readme.relative_to(NATIVE)}: {len(body)} lines (3-6; the rest goes to NOTES.md)"
