"""The floor: a bare process that parses a module with jaxlib's MLIR bindings and
walks every op once. Nothing of hloscope is imported.

    python bench/floor.py FILE

For HLO text the floor is XLA's parser, jaxlib's `hlo_to_stablehlo` and the MLIR
parse of its output: the least anything must do to see HLO as MLIR.
"""

import sys

from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir


def main(path: str) -> int:
    context = jax_mlir.make_ir_context()
    data = open(path, "rb").read()
    if path.endswith(".hlo"):
        import jaxlib._hlo as hlo
        import jaxlib._jax as jax_ext

        module_proto = hlo.hlo_module_from_text(data.decode()).as_serialized_hlo_module_proto()
        data = jax_ext.mlir.hlo_to_stablehlo(module_proto)
    with context:
        module = ir.Module.parse(data)
    count = 0

    def visit(op):
        nonlocal count
        count += 1
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    print(count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
