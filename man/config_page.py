#!/usr/bin/env python3
"""A section-5 man page from one part of docs/CONFIGURATION.md (the one source of the text).

    config_page.py DOC HEADING NAME SECTION DESCRIPTION VERSION OUTPUT

DOC's top-level part whose `# ` heading starts with HEADING (up to the next `# ` heading) becomes
the page: its first paragraphs the DESCRIPTION section, its `##` sections the page's sections.
go-md2man (Debian package go-md2man) writes the roff; tables need tbl, so the page starts with
the `'\\" t` line that tells man(1) to run it. Tables of the document become lists (see below).
"""
import re
import subprocess
import sys
import tempfile

doc, heading, name, section, description, version, output = sys.argv[1:8]
lines = open(doc, encoding="utf-8").read().split("\n")
start = next((i for i, l in enumerate(lines) if l.startswith("# " + heading)), None)
if start is None:
    sys.exit(f"config_page.py: no '# {heading}' heading in {doc}")
end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
part = lines[start + 1:end]

def table_rows_as_items(part):
    """Markdown tables as items: a terminal has no room for six columns. `| a | b | c |` rows
    under a header `| K | B | C |` become `- a: B b; C c`."""
    cells = lambda row: [c.strip() for c in row.strip().strip("|").split("|")]
    out, i = [], 0
    while i < len(part):
        if part[i].startswith("|") and i + 1 < len(part) and re.match(r"^\|[-:| ]+\|$", part[i + 1].strip()):
            header = cells(part[i])
            i += 2
            while i < len(part) and part[i].startswith("|"):
                row = cells(part[i])
                rest = "; ".join(f"{h.lower()}: {c}" if h else c for h, c in zip(header[1:], row[1:]) if c)
                out.append(f"- {row[0]} — {rest}")
                i += 1
            continue
        out.append(part[i])
        i += 1
    return out

body = []
in_code = False
for line in table_rows_as_items(part):
    if line.startswith("```"):
        in_code = not in_code
    elif not in_code and line.startswith("#"):
        line = line[1:]  # one level up: `##` sections become the page's sections
        if re.match(r"^# ", line):
            line = "# " + line[2:].upper()
    # Links into the other docs: the text, and the file named (no web links in a man page).
    line = re.sub(r"\[([^\]]+)\]\(([A-Za-z0-9_.-]+\.md)(#[^)]*)?\)",
                  lambda m: m[1] if m[2] in m[1] else f"{m[1]} ({m[2]})", line)
    line = re.sub(r"\[([^\]]+)\]\(#[^)]*\)", r"\1", line)
    body.append(line)

page = [f'% {name.upper()} {section} "" "eventd {version}" "eventd"', "",
        "# NAME", f"{name} - {description}", "", "# DESCRIPTION"] + body + [
        "", "# SEE ALSO", "eventd(8), kmes-shimd(8), eventctl(1); the full documentation in share/doc/eventd"]
with tempfile.NamedTemporaryFile("w", suffix=".md", encoding="utf-8") as md:
    md.write("\n".join(page) + "\n")
    md.flush()
    roff = subprocess.run(["go-md2man", "-in", md.name], check=True, capture_output=True, text=True).stdout
# Left-adjusted (long table cells cannot be justified), and every non-ASCII character as a
# groff escape (preconv), so the page reads the same whatever the reader's locale.
roff = re.sub(r"(\.TH [^\n]*\n)", r"\1.ad l\n", roff, count=1)
roff = subprocess.run(["preconv", "-e", "utf-8"], input=roff.encode("utf-8"), check=True,
                      capture_output=True).stdout.decode("ascii")
roff = "\n".join(l for l in roff.split("\n") if not l.startswith(".lf "))  # preconv's line markers
with open(output, "w", encoding="ascii") as out:
    out.write("'\\\" t\n" + roff)
