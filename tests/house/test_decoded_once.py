"""The IR is decoded once, in `hloscope.ir`: types, shardings, meshes, aliases,
frontend attributes, memory kinds and spaces, symbol references and locations are
fields and properties of the model. Outside `ir/`:

- no module imports one of `ir`'s text decoders (the functions of
  `ir.attributes`, `ir.types`, `ir.locations` and `ir.model` that read printed
  text); the classes they return, and the functions that describe a decoded value
  in words, may be imported;
- no module uses regular expressions unless it is listed below with the reason
  its patterns read something that is not MLIR or XLA syntax the model holds. A new
  regex in a module not listed fails here: read the value from the model instead,
  or add the decoding to `ir/`.
"""

import ast
from pathlib import Path

import hloscope

PACKAGE = Path(hloscope.__file__).resolve().parent

# The modules of `ir` whose functions decode printed text.
DECODER_MODULES = frozenset(
    {"hloscope.ir.attributes", "hloscope.ir.types", "hloscope.ir.locations", "hloscope.ir.model"}
)

# Functions of those modules that read no text (a decoded value in, words out; a
# path's owner; an op's kind by name).
NOT_DECODERS = frozenset(
    {
        "is_computation",  # an op's kind, from its (interned) name
        "counts_as_op",  # the same, from an op name of jaxlib's MLIR objects
        "sharding_words",  # a decoded sharding in words
        "sharding_brief",  # a decoded sharding for a table cell
        "is_user_file",  # whether a file path is the user's
        "user_frame",  # the innermost frame of a decoded location in the user's code
        "with_declared_axes",  # decoded meshes under the axis names the user declared
    }
)

# (module, decoder): text that reaches an analysis from outside the model.
DECODERS_ALLOWED = frozenset(
    {
        # The sharding the caller placed an argument with, as XLA text from the
        # lowering (`jax.export.Exported.in_shardings_hlo`), not an attribute.
        ("analyses/params.py", "parse_hlo_sharding"),
    }
)

# Modules outside `ir/` that use regular expressions, and what their patterns read.
REGEX_ALLOWED = {
    # Pytree paths and Python names, not IR.
    "render/text/common.py": "pytree paths (`params['w'][0]`) split into steps",
    "analyses/params.py": "pytree paths and PartitionSpec reprs from the lowering",
    "analyses/diff/parameters.py": "generated argument names (`%arg3`, `Arg_0.1`)",
    "analyses/placement/collectives.py": "op names that are collectives",
    "analyses/placement/memory.py": "host callback custom call targets, by name",
    "analyses/structure.py": "XLA's numeric suffixes of function names (`f.1.2`)",
    "analyses/fusions.py": "JAX's name stack (`jit(f)`), HLO instruction names",
    # Text that is not the model: JAX's messages, XLA's report files, the command line.
    "analyses/compiles.py": "shapes in JAX's explanation of a recompilation",
    "sources/jax/capture.py": "JAX's explanation of a recompilation",
    "sources/target.py": "targets and `--arg` specs on the command line",
    "compile_for.py": "`--for` specs on the command line (a topology `2x4`, `h100x8`)",
    "sources/jax/platforms.py": "the device count in the program's XLA_FLAGS",
    "sources/jax/explain_words.py": "JAX 0.8's words in its explanation of a recompilation",
    "render/text/memory.py": "layouts in shapes of XLA's buffer-assignment report",
    "sources/dumps.py": "sniffing a file's format, and XLA's and JAX's dump file names",
    "sources/loader.py": "sniffing whether HLO text is scheduled, before it is parsed",
    # XLA's per-pass dumps: hundreds of HLO texts counted line by line, with no model
    # built (a model per pass file would cost minutes).
    "analyses/passes.py": "instruction lines of XLA's per-pass HLO dumps",
    # Printed text compared or shown as text.
    "analyses/aot/text.py": "the module's printed text, compared with names normalised",
    "analyses/diff/names.py": "spellings of printed attribute values that printers differ on",
    "tui/highlight.py": "highlighting the printed module",
    "tui/printed.py": "finding ops and values in the printed module, and searching it",
}


def _outside_ir() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "ir")


def _decoders_imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names if alias.name in DECODER_MODULES]
            found.update(f"{name} (the module)" for name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if node.module in DECODER_MODULES:
                    name = alias.name
                    if name[:1].islower() and name not in NOT_DECODERS:
                        found.add(name)
                elif f"{node.module}.{alias.name}" in DECODER_MODULES:
                    found.add(f"{node.module}.{alias.name} (the module)")
    return found


def _uses_regex(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name == "re" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "re":
            return True
    return False


def test_no_module_outside_ir_imports_a_text_decoder():
    found = {
        (str(path.relative_to(PACKAGE)), name)
        for path in _outside_ir()
        for name in _decoders_imported(path)
    }
    assert found <= DECODERS_ALLOWED, sorted(found - DECODERS_ALLOWED)


def test_no_module_outside_ir_matches_ir_syntax_with_a_regex():
    using = {str(p.relative_to(PACKAGE)) for p in _outside_ir() if _uses_regex(p)}
    assert using <= REGEX_ALLOWED.keys(), sorted(using - REGEX_ALLOWED.keys())


def test_the_allowlists_name_no_module_that_left():
    # An entry whose module no longer needs it goes, so that the list stays the truth.
    using = {str(p.relative_to(PACKAGE)) for p in _outside_ir() if _uses_regex(p)}
    assert REGEX_ALLOWED.keys() <= using, sorted(REGEX_ALLOWED.keys() - using)
    decoders = {
        (str(p.relative_to(PACKAGE)), n) for p in _outside_ir() for n in _decoders_imported(p)
    }
    assert decoders >= DECODERS_ALLOWED, sorted(DECODERS_ALLOWED - decoders)


def test_the_checks_see_what_they_look_for(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text(
        "import re\n"
        "from hloscope.ir.model import Module, is_computation\n"
        "from hloscope.ir.attributes import Mesh, string_attribute\n"
        "from hloscope.ir import types\n"
    )
    assert _uses_regex(module)
    assert _decoders_imported(module) == {"string_attribute", "hloscope.ir.types (the module)"}
