"""Build the accuracy corpus into bench/corpus/ from openly licensed text reachable here.

    python bench/corpus.py            # fetch what is missing, then write bench/corpus/*.jsonl
    python bench/corpus.py --refresh  # fetch again

Nothing third-party is committed: the text is fetched and extracted on demand (bench/corpus/ is
not tracked). Each kind of content becomes ``bench/corpus/KIND.jsonl``, one paragraph (>= 200
characters) per line as ``{"text": ...}``, plus ``manifest.json`` naming the sources.

Sources (all from Debian's archive, DFSG-free, or from this machine):
- translated package descriptions (DDTP ``Translation-LANG`` indexes), fetched with
  ``apt-get update`` into a private lists folder, for the languages Debian translates;
- gettext catalogues (``.mo``) of Debian packages, fetched with ``apt-get download`` and unpacked
  with ``dpkg-deb -x`` (program messages, help texts);
- source code: the Python standard library of the running interpreter;
- JSON tool output and shell command output: commands run on this machine (package lists,
  block devices, mounts, file listings, processes); no environment variables are read;
- emoji-heavy text: English and Russian descriptions with emoji, skin tones, ZWJ sequences and
  flags inserted at word boundaries by a seeded random generator;
- emoji sequences: text made mostly of multi-code-point emoji (ZWJ families and professions
  with skin tones, couples, skin-toned hands, country and subdivision flags, keycaps) with a
  few English and Persian words between them, from a seeded random generator.

Not used, on purpose (reserved for independent checks): Debian's translated manual pages, FAQ,
maint-guide, fortunes, LibreOffice or GIMP help/l10n packages, iso-codes.

Needs: apt-get, apt-helper (/usr/lib/apt/apt-helper), dpkg-deb, network access to the Debian
archive. Root is not needed for ``apt-get download``; ``apt-get update`` into a private folder
is run with ``-o Dir::State::Lists=...``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "corpus"
MIN_PARAGRAPH = 200
MAX_PARAGRAPH = 1200
#: Characters kept per kind (a kind with less text keeps all it has).
MAX_CHARS = 150_000

#: Kind -> DDTP language code (Translation-XX files) and gettext locale directories.
LANGUAGES: dict[str, dict[str, list[str]]] = {
    "en": {"ddtp": ["en"], "mo": []},
    "de": {"ddtp": ["de"], "mo": ["de"]},
    "pt": {"ddtp": ["pt_BR", "pt"], "mo": ["pt_BR", "pt"]},
    "pl": {"ddtp": ["pl"], "mo": ["pl"]},
    "cs": {"ddtp": ["cs"], "mo": ["cs"]},
    "ru": {"ddtp": ["ru"], "mo": ["ru"]},
    "uk": {"ddtp": ["uk"], "mo": ["uk"]},
    "el": {"ddtp": ["el"], "mo": ["el"]},
    "ar": {"ddtp": [], "mo": ["ar"]},
    "fa": {"ddtp": ["fa"], "mo": ["fa"]},  # Persian: Arabic script, other letters and words
    "he": {"ddtp": [], "mo": ["he"]},
    "hi": {"ddtp": [], "mo": ["hi"]},
    "mr": {"ddtp": [], "mo": ["mr"]},
    "th": {"ddtp": [], "mo": ["th"]},
    "zh": {"ddtp": ["zh_CN"], "mo": ["zh_CN"]},
    "ja": {"ddtp": ["ja"], "mo": ["ja"]},
    "ko": {"ddtp": ["ko"], "mo": ["ko"]},
    "ka": {"ddtp": [], "mo": ["ka"]},  # Georgian: the "other" class
}

#: Debian packages whose gettext catalogues are used (none of the reserved sources).
MO_PACKAGES = [
    "apt", "dpkg", "debconf-i18n", "adduser", "coreutils", "grep", "sed", "tar", "findutils",
    "diffutils", "bash", "gettext", "git", "wget", "util-linux-locales", "e2fsprogs-l10n",
    "libglib2.0-data", "libgtk2.0-common", "libgtk-3-common", "packagekit", "appstream",
    "libpam-runtime", "gsettings-desktop-schemas", "gnupg-l10n", "tasksel-data", "aptitude-common",
    "binutils-common", "libc-l10n", "gdb", "nano", "vim-common", "evolution-data-server-common",
]

FORBIDDEN = re.compile(r"manpages|debian-faq|maint-guide|fortune|libreoffice|gimp|iso-codes")

SHELL_COMMANDS = [
    "ls -la /usr/lib", "ls -la /usr/bin", "ls -la /etc", "ls -la /usr/share/doc",
    "ps aux", "df -h", "df -i", "free -m", "uname -a", "mount", "dpkg -l",
    "apt-cache policy python3 apt dpkg bash", "apt-cache depends apt dpkg coreutils",
    "du -sh /usr/share/locale/de /usr/share/locale/ru /usr/lib/python3", "id",
    "find /usr/share/doc -maxdepth 2 -name copyright", "stat /usr/bin/apt /usr/bin/dpkg /bin/ls",
    "ls -laR /usr/lib/python3/dist-packages",
]


def log(message: str) -> None:
    print(message, file=sys.stderr)


def run(cmd: list[str] | str, **kwargs) -> str:
    result = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                            shell=isinstance(cmd, str), **kwargs)
    return result.stdout


# --- Fetching ---------------------------------------------------------------------------------


def fetch_ddtp(cache: Path) -> dict[str, str]:
    """Translation-XX files (decompressed text) keyed by DDTP language code."""
    lists = cache / "apt-lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    codes = sorted({c for spec in LANGUAGES.values() for c in spec["ddtp"]})
    if not any(lists.glob("*Translation-*")):
        log("apt-get update (translated descriptions) ...")
        subprocess.run(
            ["apt-get", "update", "-o", f"Dir::State::Lists={lists}",
             "-o", f"Acquire::Languages={','.join(codes)}"],
            check=False, capture_output=True)
    texts: dict[str, str] = {}
    for path in sorted(lists.glob("*_main_i18n_Translation-*")):
        if "bookworm-" in path.name or "security" in path.name:
            continue  # the small update indexes repeat the main one
        code = path.name.split("Translation-", 1)[1].split(".", 1)[0].replace("%5f", "_")
        texts[code] = run(["/usr/lib/apt/apt-helper", "cat-file", str(path)])
    return texts


def fetch_debs(cache: Path) -> Path:
    """Download and unpack MO_PACKAGES; returns the unpacked root."""
    debs, root = cache / "debs", cache / "unpacked"
    debs.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    for package in MO_PACKAGES:
        assert not FORBIDDEN.search(package), package
        if not list(debs.glob(f"{package}_*.deb")):
            log(f"apt-get download {package}")
            subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True)
    for deb in sorted(debs.glob("*.deb")):
        marker = root / (deb.name + ".done")
        if not marker.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            marker.touch()
    return root


# --- Parsing ----------------------------------------------------------------------------------


def read_mo(path: Path) -> list[str]:
    """The translated strings of a .mo catalogue, in file order (plural forms split)."""
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    order = "<" if magic == 0x950412DE else ">"
    _rev, count, _ids, strs = struct.unpack_from(order + "4I", data, 4)
    out = []
    for i in range(count):
        length, offset = struct.unpack_from(order + "2I", data, strs + 8 * i)
        raw = data[offset : offset + length]
        if not raw or raw.startswith(b"Project-Id-Version") or b"\nContent-Type:" in raw:
            continue
        for form in raw.split(b"\0"):
            text = form.decode("utf-8", "replace").strip()
            if text:
                out.append(text)
    return out


def ddtp_descriptions(text: str) -> list[str]:
    """Long descriptions of a Translation-XX file, one string per package."""
    out: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("Description-") and not line.startswith("Description-md5"):
            if current:
                out.append("\n".join(current))
            current = [line.split(":", 1)[1].strip()]
        elif line.startswith(" ") and current is not None:
            body = line[1:]
            current.append("" if body.strip() == "." else body)
        elif not line.strip() and current:
            out.append("\n".join(current))
            current = None
    if current:
        out.append("\n".join(current))
    return out


def paragraphs(pieces: list[str], *, joiner: str = "\n") -> list[str]:
    """Join consecutive pieces into paragraphs of MIN_PARAGRAPH..~MAX_PARAGRAPH characters."""
    out, buffer, size = [], [], 0
    for piece in pieces:
        piece = piece.strip("\n")
        while len(piece) > MAX_PARAGRAPH:  # split very long pieces at a line or space
            cut = max(piece.rfind("\n", 0, MAX_PARAGRAPH), piece.rfind(" ", 0, MAX_PARAGRAPH))
            cut = cut if cut > MIN_PARAGRAPH else MAX_PARAGRAPH
            pieces_head, piece = piece[:cut], piece[cut:].lstrip("\n ")
            if buffer:
                out.append(joiner.join(buffer))
                buffer, size = [], 0
            out.append(pieces_head)
        if not piece:
            continue
        buffer.append(piece)
        size += len(piece) + len(joiner)
        if size >= MIN_PARAGRAPH:
            out.append(joiner.join(buffer))
            buffer, size = [], 0
    return [p for p in out if len(p) >= MIN_PARAGRAPH]


def interleave(*lists: list[str]) -> list[str]:
    out = []
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x):
                out.append(x[i])
    return out


def cap(items: list[str], limit: int = MAX_CHARS) -> list[str]:
    out, total = [], 0
    for item in items:
        if total >= limit:
            break
        out.append(item)
        total += len(item)
    return out


def spread(items: list[str], limit: int = MAX_CHARS) -> list[str]:
    """Take items evenly from the whole list (not just its start) up to `limit` characters."""
    total = sum(len(x) for x in items)
    if total <= limit:
        return items
    step = total / limit
    return cap(items[:: max(1, int(step))] if step >= 2 else items, limit)


# --- Kinds ------------------------------------------------------------------------------------


def language_paragraphs(ddtp: dict[str, str], unpacked: Path) -> dict[str, list[str]]:
    out = {}
    for kind, spec in LANGUAGES.items():
        descriptions = [d for code in spec["ddtp"] for d in ddtp_descriptions(ddtp.get(code, ""))]
        messages: list[str] = []
        seen: set[str] = set()
        for locale in spec["mo"]:
            folder = unpacked / "usr" / "share" / "locale" / locale / "LC_MESSAGES"
            for mo in sorted(folder.glob("*.mo")) if folder.is_dir() else []:
                if FORBIDDEN.search(mo.name) or mo.name.startswith("iso_"):
                    continue
                for text in read_mo(mo):
                    if text not in seen:
                        seen.add(text)
                        messages.append(text)
        from_descriptions = spread(paragraphs(descriptions, joiner="\n\n"))
        from_messages = spread(paragraphs(messages))
        out[kind] = cap(interleave(from_descriptions, from_messages))
    return out


def code_paragraphs() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py") if p.stat().st_size > 4000)
    blocks: list[str] = []
    for path in files[::3]:
        blocks.extend(re.split(r"\n\s*\n", path.read_text("utf-8", "replace")))
    return spread(paragraphs(blocks, joiner="\n\n"))


def json_paragraphs() -> list[str]:
    docs: list[tuple[str, object]] = []

    def add(name: str, text: str) -> None:
        try:
            docs.append((name, json.loads(text)))
        except ValueError:
            pass

    add("pip list", run([sys.executable, "-m", "pip", "list", "--format", "json"]))
    add("pip inspect", run([sys.executable, "-m", "pip", "inspect"]))
    add("lsblk", run(["lsblk", "-J", "-O"]))
    add("findmnt", run(["findmnt", "-J"]))
    add("ip addr", run(["ip", "-j", "addr"]))
    records = []
    for block in run("apt-cache show apt dpkg coreutils bash python3 git tar grep sed").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", block, re.M))
        if fields:
            records.append(fields)
    docs.append(("apt-cache show", records))
    listing = []
    for entry in sorted(os.scandir("/usr/bin"), key=lambda e: e.name)[:400]:
        st = entry.stat(follow_symlinks=False)
        listing.append({"name": entry.name, "path": entry.path, "size": st.st_size,
                        "mode": oct(st.st_mode), "mtime": int(st.st_mtime),
                        "is_symlink": entry.is_symlink()})
    docs.append(("scandir /usr/bin", listing))
    pieces: list[str] = []
    for i, (_name, doc) in enumerate(docs):
        # Tool output comes both pretty-printed and compact.
        text = json.dumps(doc, indent=2 if i % 2 == 0 else None, ensure_ascii=False)
        if i % 2 == 0:
            pieces.extend(re.split(r"\n(?=  [\]\}\{\"])", text))
        else:
            pieces.extend(re.split(r"(?<=\}), (?=\{)", text))
    return spread(paragraphs(pieces))


def shell_paragraphs() -> list[str]:
    pieces = []
    for cmd in SHELL_COMMANDS:
        output = run(cmd + " 2>&1")
        lines = output.splitlines()[:600]
        pieces.append(f"$ {cmd}")
        pieces.extend(lines)
    return spread(paragraphs(pieces))


def emoji_pool() -> list[str]:
    singles = []
    emoji_blocks = [*range(0x1F300, 0x1F650), *range(0x1F680, 0x1F700),
                    *range(0x1F900, 0x1FA00), *range(0x1FA70, 0x1FB00)]
    for cp in emoji_blocks:
        try:
            unicodedata.name(chr(cp))
        except ValueError:
            continue
        if not 0x1F3FB <= cp <= 0x1F3FF:
            singles.append(chr(cp))
    tones = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    zwj = ["👨‍👩‍👧", "👩‍💻", "🧑‍🚀", "🏳️‍🌈", "👨‍👨‍👦‍👦", "🐕‍🦺", "❤️‍🔥"]
    vs16 = ["❤️", "✅", "✨", "⚠️", "☀️", "✔️", "⭐", "☕"]
    flags = ["".join(chr(0x1F1E6 + ord(c) - 65) for c in code)
             for code in ("DE", "FR", "JP", "BR", "UA", "US", "IN", "KR", "GB", "PL")]
    rng = random.Random(7)
    return (singles + [rng.choice(["👍", "👋", "🙏", "💪"]) + t for t in tones] * 4
            + zwj * 8 + vs16 * 12 + flags * 6)


def emoji_paragraphs(english: list[str], russian: list[str]) -> list[str]:
    pool, rng = emoji_pool(), random.Random(2024)
    out = []
    for text in interleave(english, russian):
        words = text.split(" ")
        for _ in range(max(2, len(words) // 4)):
            at = rng.randrange(len(words) + 1)
            run_length = rng.choice([1, 1, 1, 2, 3])
            words.insert(at, "".join(rng.choice(pool) for _ in range(run_length)))
        out.append(" ".join(words))
    return cap(out, MAX_CHARS // 2)


def emoji_sequences() -> list[str]:
    """Multi-code-point emoji: ZWJ families and professions (with skin tones), couples,
    skin-toned hands, country flags (regional-indicator pairs), subdivision flags (tag
    sequences) and keycaps. Tokenizers spend several tokens on each of these."""
    zwj, tone_of = "\u200d", [chr(c) for c in range(0x1F3FB, 0x1F400)]
    adults, kids = ["👨", "👩", "🧑"], ["👧", "👦", "🧒"]
    families = [zwj.join(p) for p in ([a, b, k] for a in adults for b in adults for k in kids)]
    families += [zwj.join([a, b, k, l]) for a in adults[:2] for b in adults[:2] for k in kids[:2]
                 for l in kids[:2]]
    jobs = ["⚕️", "🎓", "🏫", "⚖️", "🌾", "🍳", "🔧", "🏭", "💼", "🔬", "💻", "🎤", "🎨",
            "✈️", "🚀", "🚒", "🦯", "🦽"]
    people = [p + tone + zwj + job for p in adults for tone in ["", *tone_of] for job in jobs]
    couples = [a + zwj + "❤️" + zwj + b for a in adults[:2] for b in adults[:2]]
    couples += [a + zwj + "❤️" + zwj + "💋" + zwj + b for a in adults[:2] for b in adults[:2]]
    hands = [h + t for h in "👋👍👎👏🙏💪✋🤝🫶👌✌🤞" for t in tone_of]
    countries = ("DE FR JP BR UA US IN KR GB PL IR AF SA EG TR CN MX CA AU NZ ZA NG KE AR CL CO "
                 "PE ES PT IT NL BE CH AT SE NO DK FI IS IE CZ SK HU RO BG GR RS HR SI LT LV EE "
                 "BY KZ UZ PK BD LK NP TH VN MY ID PH SG IL JO LB SY IQ AE QA MA DZ TN ET").split()
    flags = ["".join(chr(0x1F1E6 + ord(c) - 65) for c in code) for code in countries]
    flags += ["🏴" + "".join(chr(0xE0000 + ord(c)) for c in tag) + "\U000E007F"
              for tag in ("gbeng", "gbsct", "gbwls")]
    flags += ["🏳️‍🌈", "🏳️‍⚧️", "🏴‍☠️"]
    keycaps = [k + "\ufe0f\u20e3" for k in "0123456789#*"] + ["🔟"]
    return families + people + couples + hands + flags + keycaps


def emoji_sequence_paragraphs(words: list[str]) -> list[str]:
    """Text made mostly of emoji sequences (chat reactions, status lines, flag lists), with a
    few words between them, as messages full of emoji look."""
    pool, rng = emoji_sequences(), random.Random(1905)
    out = []
    while sum(map(len, out)) < MAX_CHARS // 2:
        pieces: list[str] = []
        while sum(map(len, pieces)) < rng.randrange(MIN_PARAGRAPH, 3 * MIN_PARAGRAPH):
            run = "".join(rng.choice(pool) for _ in range(rng.choice([1, 2, 3, 4, 6])))
            pieces.append(run if rng.random() < 0.7 else f"{rng.choice(words)} {run}")
        out.append(rng.choice([" ", "", "\n"]).join(pieces))
    return out


# --- Main -------------------------------------------------------------------------------------


def build(out: Path = OUT, *, refresh: bool = False) -> dict[str, int]:
    cache = out / "_cache"
    if refresh and cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    ddtp = fetch_ddtp(cache)
    unpacked = fetch_debs(cache)
    kinds = language_paragraphs(ddtp, unpacked)
    kinds["code"] = code_paragraphs()
    kinds["json"] = json_paragraphs()
    kinds["shell"] = shell_paragraphs()
    kinds["emoji"] = emoji_paragraphs(kinds["en"][:150], kinds["ru"][:150])
    words = [w for text in kinds["en"][:100] + kinds["fa"][:50] for w in text.split()[:20]]
    kinds["emoji_seq"] = emoji_sequence_paragraphs(words or ["ok"])
    sizes = {}
    for kind, items in kinds.items():
        with open(out / f"{kind}.jsonl", "w", encoding="utf-8") as f:
            for text in items:
                f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
        sizes[kind] = sum(len(t) for t in items)
    manifest = {
        "kinds": {k: {"paragraphs": len(v), "chars": sizes[k]} for k, v in kinds.items()},
        "ddtp_languages": sorted(ddtp),
        "debian_packages": sorted(p.name for p in (cache / "debs").glob("*.deb")),
        "python": sys.version.split()[0],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return sizes


def load(out: Path = OUT) -> dict[str, list[str]]:
    """The corpus as {kind: [paragraph, ...]} (build it first)."""
    kinds = {}
    for path in sorted(out.glob("*.jsonl")):
        with open(path, encoding="utf-8") as f:
            kinds[path.stem] = [json.loads(line)["text"] for line in f]
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--refresh", action="store_true", help="fetch the sources again")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = build(args.out, refresh=args.refresh)
    for kind, chars in sizes.items():
        flag = "" if chars >= 30_000 else "   (< 30,000 characters)"
        print(f"{kind:6s} {chars:8,d} characters{flag}")


if __name__ == "__main__":
    main()
