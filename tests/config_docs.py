#!/usr/bin/env python3
"""The configuration pages hold what the code does (issue 40 item 9): the `config-docs` test.

    config_docs.py [SOURCE_ROOT]

Checks, and names every difference it finds (exit 1):

1. every key of the shipped configuration files (config/*.json: meson installs them as
   examples, debian/rules as the conffiles in /etc) is documented in the key table of the page
   that owns that file — kmes.json and eventd.json in docs/CONFIGURATION.md, eventd-forward.json
   and eventd.json's CollectorSource in docs/FORWARD.md (CONFIGURATION.md links there: STYLE.md,
   "each concept is described once"). contrib/grafana/eventd.json is a dashboard, not a
   configuration; debian/ ships no file of its own;
2. every default in those key tables is the code's default, and every key the code reads is in
   a table (a required key or one whose default is computed — "the machine's hostname" — is
   documented in words, not as a value);
3. the examples of CONFIGURATION.md use documented keys only; the shipped eventd.json printed
   there is config/eventd.json and holds every optional key at its default, as the page says;
   the kmes.json that "sets every key" does.

Where the code's defaults come from. No daemon prints its defaults (there is no
--print-config), and adding one to three daemons only for this check would make a test of
documentation wait for a C++ build. The defaults are read from the source instead, from the
two places that define them: a configuration struct's member initialisers (eventd/config.hpp
`uint32_t max_batch_size = 10000;`) and the parser's call that binds a key to its member
(eventd/config.cpp `r.number("MaxBatchSize", c.max_batch_size, …)`). Initialisers are
evaluated as C++ would (integer suffixes, `<<`, `*`, macros of kmes.h, constexpr constants,
enum values named through the parser's own name table). What this script cannot resolve is
a failure naming the key, never a pass: a refactor that moves a default elsewhere breaks this
test loudly, and the fix is to teach it the new place (SCHEMAS and the helpers below).
"""
import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
problems = []


def problem(text):
    problems.append(text)


def read(rel):
    return (ROOT / rel).read_text(encoding="utf-8")


class Mark:
    """A default that is no value: an unset std::optional, an absent JSON value, a required key."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


UNSET = Mark("unset")
REQUIRED = Mark("required")

# --- The code's side --------------------------------------------------------------------------

# One schema per JSON object the code parses: the parser file, the variable the parser binds
# keys to (`c.member`), the struct that holds the defaults, and keys bound otherwise (read with
# `contains("Key")` then assigned: the key must still appear in the parser file).
SCHEMAS = {
    "kmes": dict(parser="kmes-shim/shimd/config.cpp", var="c",
                 struct=("kmes-shim/shimd/config.hpp", "ShimConfig"), extra={}),
    "kmes.Audit": dict(parser="kmes-shim/shimd/config.cpp", var="target",
                       struct=("kmes-shim/audit/audit_source.hpp", "AuditSettings"),
                       extra={"Mode": "mode", "RulesFile": "rules_file"}),
    "kmes.Generators[]": dict(parser="kmes-shim/shimd/config.cpp", var="spec",
                              struct=("kmes-shim/shimd/config.hpp", "GeneratorSpec"), extra={"Types": "types"}),
    "eventd": dict(parser="eventd/config.cpp", var="c", struct=("eventd/config.hpp", "EventdConfig"),
                   extra={"CollectorSource": "collector", "Security": "security"}),
    "eventd.CollectorSource": dict(parser="eventd/collector/source_config.cpp", var="c",
                                   struct=("eventd/collector/source_config.hpp", "SourceConfig"), extra={}),
    "forward": dict(parser="forward/config.cpp", var="c", struct=("forward/config.hpp", "ForwardConfig"), extra={}),
}
# Structs a member may have as its type (`nats::ClientAuth auth;`).
NESTED_STRUCTS = {"ClientAuth": "nats/client_auth.hpp"}
# Keys whose value is an object or array of objects parsed by another schema.
NESTED = {
    "kmes": {"Audit": ("object", "kmes.Audit"), "Generators": ("array", "kmes.Generators[]")},
    "eventd": {"CollectorSource": ("object", "eventd.CollectorSource"), "Security": ("object", "eventd.Security")},
}
# Headers searched for macros and constexpr constants named in initialisers.
CONSTANT_DIRS = ["kmes-shim", "eventd", "forward", "nats", "base"]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def block_after(text, start):
    """The text between the brace at or after `start` and its match."""
    open_at = text.index("{", start)
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_at + 1:i]
    raise ValueError("unbalanced braces")


_constants = {}


def constant(name):
    """The C++ text of a macro or constexpr constant `name`, from the project's headers."""
    if not _constants:
        for d in CONSTANT_DIRS:
            for path in sorted((ROOT / d).rglob("*.h*")):
                text = strip_comments(path.read_text(encoding="utf-8"))
                for m in re.finditer(r"^\s*#define\s+(\w+)\s+(.+?)\s*$", text, flags=re.M):
                    _constants.setdefault(m[1], m[2])
                for m in re.finditer(r"constexpr\s+[\w:<>]+\s+(\w+)\s*=\s*([^;]+);", text):
                    _constants.setdefault(m[1], m[2])
    if name not in _constants:
        raise ValueError(f"no macro or constexpr constant {name} in {', '.join(CONSTANT_DIRS)}")
    return _constants[name]


def evaluate(expr, enums):
    """A C++ initialiser as a JSON-like value."""
    expr = expr.strip()
    if expr.startswith('"'):
        return json.loads(expr)
    if expr in ("true", "false"):
        return expr == "true"
    if re.fullmatch(r"\{\s*\}", expr):
        return None  # empty braces: the type decides
    if expr.startswith("{{"):  # std::map<std::string, N>{{"a", 1}, …}
        return {k: int(v) for k, v in re.findall(r'\{\s*"([^"]*)"\s*,\s*(\d+)\s*\}', expr)}
    enum = re.fullmatch(r"(?:\w+::)*(\w+)::(\w+)", expr)
    if enum:
        if enum[2] not in enums:
            raise ValueError(f"enum value {expr}: its name is not in the parser's name table")
        return enums[enum[2]]
    if re.fullmatch(r"[A-Za-z_]\w*", expr):
        return evaluate(constant(expr), enums)
    # Integer arithmetic: digit separators, suffixes and named constants out, then Python's.
    text = re.sub(r"(?<=\d)'(?=\d)", "", expr)
    text = re.sub(r"\b(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])\b", r"\1", text)
    text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({evaluate(constant(m[0]), enums)})", text)
    return _arith(ast.parse(text, mode="eval").body, expr)


def _arith(node, expr):
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b}
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in ops:
        return ops[type(node.op)](_arith(node.left, expr), _arith(node.right, expr))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arith(node.operand, expr)
    raise ValueError(f"cannot evaluate the initialiser {expr!r}")


def struct_members(path, name):
    """member → (type, initialiser text or None) of `struct name { … }` in `path`."""
    text = strip_comments(read(path))
    m = re.search(r"\bstruct\s+" + name + r"\s*\{", text)
    if not m:
        raise ValueError(f"no struct {name} in {path}")
    members = {}
    depth, statement = 0, ""
    for ch in block_after(text, m.start()):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == ";" and depth == 0:
            s = " ".join(statement.split())
            statement = ""
            if not s or "(" in s or s.startswith(("using ", "static ", "enum ", "friend ")):
                continue
            d = re.fullmatch(r"(?P<type>.+?)\s+(?P<name>\w+)\s*(?:=\s*(?P<init>.+)|(?P<brace>\{.*\}))?", s)
            if d:
                members[d["name"]] = (d["type"], d["init"] if d["init"] is not None else d["brace"])
        else:
            statement += ch
    return members


def enum_names(parser_text):
    """Enum value → its configuration name, from the parser's table ({"auto", audit::Mode::automatic})."""
    return {m[2]: m[1] for m in re.finditer(r'\{\s*"(\w+)"\s*,\s*(?:\w+::)*(\w+)\s*\}', parser_text)}


def member_default(struct_path, struct_name, member_path, enums):
    members = struct_members(struct_path, struct_name)
    head, _, rest = member_path.partition(".")
    if head not in members:
        raise ValueError(f"{struct_name} in {struct_path} has no member {head}")
    type_, init = members[head]
    if rest:
        nested = type_.split("::")[-1]
        if nested not in NESTED_STRUCTS:
            raise ValueError(f"member {head} of {struct_name} has the type {type_}, not a known struct")
        return member_default(NESTED_STRUCTS[nested], nested, rest, enums)
    value = evaluate(init, enums) if init is not None else None
    if value is not None:
        return value
    if "optional<" in type_ or "json" in type_:
        return UNSET
    if "string" in type_ or "path" in type_:
        return ""
    if "vector<" in type_:
        return []
    if "map<" in type_:
        return {}
    raise ValueError(f"{struct_name}::{head} ({type_}) has no initialiser this script can read")


def code_schema(name):
    """key → default as the code has it, for one schema."""
    spec = SCHEMAS[name]
    parser = strip_comments(read(spec["parser"]))
    enums = enum_names(parser)
    bound = dict(re.findall(r'"(\w+)",\s*' + spec["var"] + r"\.([\w.]+)", parser))
    for key, member in spec["extra"].items():
        if f'"{key}"' not in parser:
            problem(f"{spec['parser']} no longer reads \"{key}\" (tests/config_docs.py SCHEMAS[{name!r}])")
        bound[key] = member
    required = set(re.findall(r'required_path\("(\w+)"', parser))
    out = {}
    for key, member in bound.items():
        kind, sub = NESTED.get(name, {}).get(key, (None, None))
        if key in required:
            out[key] = REQUIRED
        elif kind == "object":
            # An object parsed by its own schema: absent by default when the member is an
            # optional (CollectorSource) or a JSON value (Security), else that schema's
            # defaults (Audit: {"Mode": "off", …}).
            type_ = struct_members(*spec["struct"]).get(member, ("?",))[0]
            out[key] = UNSET if "optional<" in type_ or "json" in type_ else code_schema(sub)
        else:
            try:
                out[key] = member_default(*spec["struct"], member, enums)
            except ValueError as e:
                problem(f"{name} key {key}: {e}")
    return out


def security_defaults():
    text = read("eventd/access/policy_parse.cpp")
    out = {}
    for key, function in (("Events", "default_events"), ("Admins", "default_admins")):
        m = re.search(function + r'\(\)\s*\{[^}]*?R"\((.*?)\)"', text, flags=re.S)
        if not m:
            problem(f"eventd/access/policy_parse.cpp: no {function}() with a raw JSON literal")
            continue
        out[key] = json.loads(m[1])
    return out


CODE = {name: code_schema(name) for name in SCHEMAS}
CODE["eventd.Security"] = security_defaults()

# --- The documentation's side -----------------------------------------------------------------

# Where each schema's keys are documented: (page, top-level `# ` part or None, heading of the
# section that holds the table). A key cell may name several keys (`NKey` + `NKeySeedFile`);
# `Security.Events` in eventd's Security table is key Events of eventd.Security.
DOC_TABLES = [
    ("docs/CONFIGURATION.md", "# kmes-shimd configuration", "### PSD-003 §6.1 keys", "kmes"),
    ("docs/CONFIGURATION.md", "# kmes-shimd configuration", "### Linux keys", "kmes"),
    ("docs/CONFIGURATION.md", "# kmes-shimd configuration", "### The audit source", "kmes.Audit"),
    ("docs/CONFIGURATION.md", "# kmes-shimd configuration", "### Generator objects", "kmes.Generators[]"),
    ("docs/CONFIGURATION.md", "# eventd configuration", "## Keys", "eventd"),
    ("docs/CONFIGURATION.md", "# eventd configuration", "## Security", "eventd"),
    ("docs/FORWARD.md", None, "## Configuration", "forward"),
    ("docs/FORWARD.md", None, "## Collector", "eventd.CollectorSource"),
]
SHIPPED = {"kmes.json": "kmes", "eventd.json": "eventd", "eventd-forward.json": "forward"}


def headings(lines):
    """Index → line of every markdown heading (a `# comment` in a code block is none)."""
    out, code = {}, False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            code = not code
        elif not code and re.match(r"#+ ", line):
            out[i] = line
    return out


def section_of(lines, heading, page):
    """From `heading` (the line that starts with it) to the next heading of its level or above."""
    marks = headings(lines)
    start = next((i for i, l in marks.items() if l.startswith(heading)), None)
    if start is None:
        raise ValueError(f"{page}: no heading '{heading}'")
    level = len(heading) - len(heading.lstrip("#"))
    end = next((i for i, l in marks.items() if i > start and re.match(r"#{1,%d} " % level, l)), len(lines))
    return lines[start:end]


def part_lines(page, part):
    lines = read(page).split("\n")
    return lines if part is None else section_of(lines, part, page)


def section_lines(lines, heading, page):
    return section_of(lines, heading, page)[1:]


def cells(row):
    # A `|` inside backticks is no cell boundary.
    out, cur, code = [], "", False
    for ch in row.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()]


def tables(lines):
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-:| ]+\|$", lines[i + 1].strip()):
            header = [h.lower() for h in cells(lines[i])]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            yield header, rows
        else:
            i += 1


def doc_default(cell):
    """A documented default as a value, or None when it is words ("unset: root only", "—")."""
    m = re.match(r"`([^`]*)`", cell)
    if m:
        try:
            return json.loads(m[1])
        except ValueError:
            return m[1]
    m = re.match(r"-?\d+(?![\d.^])", cell)
    return int(m[0]) if m else None


# schema → key → (default cell, page:line-ish label)
documented = {}
for page, part, heading, schema in DOC_TABLES:
    try:
        section = section_lines(part_lines(page, part), heading, page)
    except ValueError as e:
        problem(f"{e} (tests/config_docs.py DOC_TABLES)")
        continue
    found = False
    for header, rows in tables(section):
        if "default" not in header or not re.search(r"\b(key|member)\b", header[0]):
            continue
        found = True
        for row in rows:
            for key in re.findall(r"`([A-Z]\w*(?:\.[A-Z]\w*)?)`", row[0]):
                target, name = schema, key
                if "." in key:
                    target, name = f"{schema}.{key.split('.')[0]}", key.split(".")[1]
                entry = dict(default=row[header.index("default")], where=f"{page} ({heading.strip('# ')})")
                if "required" in header:
                    entry["required"] = "yes" in row[header.index("required")]
                documented.setdefault(target, {})[name] = entry
    if not found:
        problem(f"{page}: no key table with a default column under '{heading}' (tests/config_docs.py DOC_TABLES)")


def same(doc_value, code_value):
    if isinstance(code_value, dict) and isinstance(doc_value, dict):  # a partial object: its members
        return all(k in code_value and same(v, code_value[k]) for k, v in doc_value.items())
    if isinstance(doc_value, bool) or isinstance(code_value, bool):
        return type(doc_value) is type(code_value) and doc_value == code_value
    return doc_value == code_value


def shown(value):
    return json.dumps(value) if not isinstance(value, Mark) else str(value)


# 2. Defaults, both ways.
for schema in list(SCHEMAS) + ["eventd.Security"]:
    code, docs = CODE[schema], documented.get(schema, {})
    for key in sorted(set(code) - set(docs)):
        problem(f"{schema} key {key}: read by the code, in no key table of the docs")
    for key in sorted(set(docs) - set(code)):
        problem(f"{schema} key {key}: documented in {docs[key]['where']}, not read by the code")
    for key in sorted(set(docs) & set(code)):
        cell, value, want = docs[key]["default"], doc_default(docs[key]["default"]), code[key]
        if "required" in docs[key] and docs[key]["required"] != (want is REQUIRED):
            problem(f"{schema} key {key}: documented as {'' if docs[key]['required'] else 'not '}required in "
                    f"{docs[key]['where']}; the code says {'' if want is REQUIRED else 'not '}required")
        if value is None:
            if not (isinstance(want, Mark) or want == ""):
                problem(f"{schema} key {key}: documented default '{cell}' in {docs[key]['where']} gives no "
                        f"value; the code's default is {shown(want)} (write it first)")
        elif isinstance(want, Mark) or not same(value, want):
            problem(f"{schema} key {key}: documented default {shown(value)} in {docs[key]['where']}, "
                    f"the code's is {shown(want)}")


def walk(schema, obj, where, seen=None):
    """Every key of `obj` (and of its nested objects) is documented; `seen` collects them (and
    the keys are checked elsewhere)."""
    for key, value in obj.items():
        if key not in documented.get(schema, {}):
            if seen is None:
                problem(f"{where}: key {key} ({schema}) is not documented")
            continue
        if seen is not None:
            seen.setdefault(schema, {})[key] = value
        kind, sub = NESTED.get(schema, {}).get(key, (None, None))
        if kind == "object" and isinstance(value, dict):
            walk(sub, value, where, seen)
        elif kind == "array" and isinstance(value, list):
            for element in value:
                if isinstance(element, dict):
                    walk(sub, element, where, seen)


# 1. The shipped files.
for path in sorted((ROOT / "config").glob("*.json")):
    if path.name not in SHIPPED:
        problem(f"config/{path.name}: a shipped configuration this check does not know (tests/config_docs.py SHIPPED)")
        continue
    walk(SHIPPED[path.name], json.loads(path.read_text(encoding="utf-8")), f"config/{path.name}")


# 3. The examples of CONFIGURATION.md.
def json_blocks(lines):
    out, block = [], None
    for line in lines:
        if line.startswith("```json"):
            block = []
        elif line.startswith("```") and block is not None:
            text = "\n".join(l for l in block if not l.strip().startswith("//"))
            out.append(json.loads("{" + text + "}" if text.lstrip().startswith('"') else text))
            block = None
        elif block is not None:
            block.append(line)
    return out


def complete(schema, seen, where, but=()):
    """Every documented key of `schema` and of its nested schemas is in `seen`, but the keys
    `but` (whose nested schemas are left out too)."""
    for name, keys in documented.items():
        nested = name[len(schema) + 1:].removesuffix("[]")
        if name != schema and (not name.startswith(schema + ".") or nested in but):
            continue
        for key in keys:
            if not (name == schema and key in but) and key not in seen.get(name, {}):
                problem(f"{where} is said to set every key but lacks {name} key {key}")


def at_defaults(schema, seen, where, but=()):
    for key, value in seen.get(schema, {}).items():
        want = CODE[schema].get(key)
        if key not in but and want is not REQUIRED and (isinstance(want, Mark) or not same(value, want)):
            problem(f"{where} is said to hold defaults but sets {key} to {json.dumps(value)}; "
                    f"the code's default is {shown(want)}")


for part, schema in (("# kmes-shimd configuration", "kmes"), ("# eventd configuration", "eventd")):
    lines = part_lines("docs/CONFIGURATION.md", part)
    for block in json_blocks(lines):
        walk(schema, block, f"an example of docs/CONFIGURATION.md ({part.strip('# ')})")
    examples = json_blocks(section_lines(lines, "## Example", "docs/CONFIGURATION.md"))
    if not examples:
        problem(f"docs/CONFIGURATION.md ({part.strip('# ')}): no json example under '## Example'")
        continue
    seen, where = {}, f"the example under '{part.strip('# ')} / Example' of docs/CONFIGURATION.md"
    walk(schema, examples[0], where, seen)
    if schema == "kmes":  # "A file that sets every key, each at its default but …"
        complete("kmes", seen, where)
        at_defaults("kmes", seen, where, but=("BufferCapacity", "AttachGroup", "EmitGroup", "Generators", "Audit"))
        at_defaults("kmes.Audit", seen, where, but=("Mode", "RulesFile"))
    else:  # "The shipped example … sets the installed paths and every optional key to its default"
        shipped = json.loads(read("config/eventd.json"))
        if examples[0] != shipped:
            problem(f"{where} is said to be config/eventd.json and is not")
        complete("eventd", seen, where, but=("CollectorSource", "Security"))
        at_defaults("eventd", seen, where)

for p in problems:
    print(f"config-docs: {p}")
if problems:
    print(f"config-docs: {len(problems)} difference(s) between the code, the shipped files and the docs")
    sys.exit(1)
count = sum(len(v) for v in documented.values())
print(f"config-docs: {count} documented keys, their defaults and the shipped files agree with the code")
