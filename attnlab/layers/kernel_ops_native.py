"""The compiled decoding step's operators in C++: attnlab::quantized_rows's CPU kernel (the products without
Python) and attnlab::decode_attention (attention over the cache up to its slot).

Why: inductor's C++ wrapper calls each graph node through torch's dispatcher. With the operator's CPU kernel in
Python (layers/kernel_ops.py), each of SmolLM2's 121 products per token went C++ -> Python (the GIL, tensors
wrapped as Python objects, the layer looked up, the output allocated, the kernel's binding) -> C++: ~5 us a
product, about a tenth of a step. Here the kernel is a C++ function registered for the same operator (the schema
and the Meta kernel stay in kernel_ops), reading a table that `serve` points it at: one row of seven int64 per
layer, in place order (the kernel function's address, the packed tiles, the bias, nb, kb, n, has_bias). The
tiled kernels (4-bit, Q8_0) all take the same arguments, so one call serves every format; a layer whose kernel
takes others (int8) has address 0.

What it does not do itself, it hands to the Python kernel (`attnlab::quantized_rows_python`, the same code as
before) through the dispatcher: no table served in this thread, a place outside it, an int8 layer, an input that
is not float32 and contiguous, and a row holding NaN or inf (the kernel refuses it; float32's product answers).
Several rows (a batch) run the one-row kernel row by row, as the Python kernel does: the same bits.

decode_attention reads the cache buffer (2, batch, kv_heads, capacity, d_head) in place for each K / V head's
query heads, positions 0 .. slot: generation/compiled.py sets the slot for the step and moves the layers' lengths
on after it (cache.LayerCache.slot_write).

Built once per torch version into the private kernel folder (kernel_build.load, ~5 s), against the headers and
libraries of the torch running this (part of this installation, as trusted as the interpreter). Where it
cannot be built the Python kernel serves the operator (kernel_ops.ready), as before.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnlab.layers import kernel_build

COLUMNS = 7  # fn, w, bias, nb, kb, n, has_bias

SOURCE = r"""
#include <cmath>
#include <cstdint>
#include <vector>
#include <torch/library.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>

namespace {
typedef int (*tiled_gemv)(const float*, const uint8_t*, const float*, float*, int64_t, int64_t, int64_t, int64_t,
                          int64_t);
struct Served { const int64_t* table = nullptr; int64_t count = 0; int64_t threads = 1; int64_t done = 0; };
thread_local Served served;  // what serve() set in this thread (the compiled step runs in its caller's thread)

at::Tensor python_kernel(const at::Tensor& x, int64_t layer, int64_t n) {
    static auto op = c10::Dispatcher::singleton()
        .findSchemaOrThrow("attnlab::quantized_rows_python", "")
        .typed<at::Tensor(const at::Tensor&, int64_t, int64_t)>();
    return op.call(x, layer, n);
}

at::Tensor rows(const at::Tensor& x, int64_t layer, int64_t n) {
    const Served s = served;
    if (s.table == nullptr || layer < 0 || layer >= s.count || x.dim() != 2
        || x.scalar_type() != at::kFloat || !x.is_contiguous())
        return python_kernel(x, layer, n);
    const int64_t* e = s.table + layer * """ + str(COLUMNS) + r""";
    const tiled_gemv fn = reinterpret_cast<tiled_gemv>(e[0]);
    if (fn == nullptr || e[5] != n) return python_kernel(x, layer, n);
    const int64_t r = x.size(0), k = x.size(1);
    if (k != e[4] * 32) return python_kernel(x, layer, n);
    at::Tensor y = at::empty({r, n}, x.options());
    const float* xp = x.const_data_ptr<float>();
    float* yp = y.mutable_data_ptr<float>();
    for (int64_t i = 0; i < r; ++i) {
        const float* row = xp + i * k;
        const float* bias = e[6] ? reinterpret_cast<const float*>(e[2]) : row;
        if (fn(row, reinterpret_cast<const uint8_t*>(e[1]), bias, yp + i * n, e[3], e[4], n, e[6], s.threads))
            return python_kernel(x, layer, n);  // a NaN or an infinity: float32's answer, row by row as before
    }
    ++served.done;
    return y;
}
// out[b, i] = softmax(scale q[b, i] . K[b, i / group, :length]) V[b, i / group, :length] for every query head i:
// a decoding step's attention over the first `length` positions of the cache buffer kv (2, batch, g, capacity, d),
// each K / V head read in place for its query heads. A clone per instruction set, chosen when the library loads.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attend(const float* __restrict__ q, const float* __restrict__ kv, float* __restrict__ out, float* w,
            int64_t batch, int64_t h, int64_t g, int64_t capacity, int64_t d, int64_t length, float scale) {
    const int64_t group = h / g, plane = batch * g * capacity * d;  // plane: K's part of kv, then V's
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < h; ++i) {
            const float* qi = q + (b * h + i) * d;
            const float* k = kv + (b * g + i / group) * capacity * d;
            const float* v = k + plane;
            float top = -INFINITY;
            for (int64_t t = 0; t < length; ++t) {
                float lanes[16] = {0};  // 16 running sums: one vector register, no reordering flag needed
                const float* kt = k + t * d;
                int64_t j = 0;
                for (; j + 16 <= d; j += 16)
                    for (int l = 0; l < 16; ++l) lanes[l] += qi[j + l] * kt[j + l];
                float dot = 0.f;
                for (; j < d; ++j) dot += qi[j] * kt[j];
                for (int l = 0; l < 16; ++l) dot += lanes[l];
                w[t] = dot * scale;
                top = w[t] > top ? w[t] : top;
            }
            float total = 0.f;
            for (int64_t t = 0; t < length; ++t) total += (w[t] = std::exp(w[t] - top));
            float* o = out + (b * h + i) * d;
            for (int64_t j = 0; j < d; ++j) o[j] = 0.f;
            for (int64_t t = 0; t < length; ++t) {
                const float wt = w[t];
                const float* vt = v + t * d;
                for (int64_t j = 0; j < d; ++j) o[j] += wt * vt[j];
            }
            const float inv = 1.f / total;
            for (int64_t j = 0; j < d; ++j) o[j] *= inv;
        }
}

at::Tensor decode_attention(const at::Tensor& q, const at::Tensor& kv, const at::Tensor& slot, double scale) {
    TORCH_CHECK(slot.numel() == 1 && slot.scalar_type() == at::kLong && slot.device().is_cpu(),
                "attnlab::decode_attention: slot is one int64 on the CPU");
    const int64_t length = *slot.const_data_ptr<int64_t>() + 1;  // positions 0 .. slot
    TORCH_CHECK(q.dim() == 4 && kv.dim() == 5 && q.scalar_type() == at::kFloat && kv.scalar_type() == at::kFloat
                && kv.is_contiguous() && q.size(2) == 1 && kv.size(0) == 2 && kv.size(1) == q.size(0)
                && q.size(1) % kv.size(2) == 0 && kv.size(4) == q.size(3) && 0 < length && length <= kv.size(3),
                "attnlab::decode_attention: q (batch, heads, 1, d) and kv (2, batch, kv_heads, capacity, d) float32, "
                "kv contiguous, 0 <= slot < capacity");
    const at::Tensor qc = q.contiguous();
    at::Tensor out = at::empty(q.sizes(), q.options());
    std::vector<float> w(length);
    attend(qc.const_data_ptr<float>(), kv.const_data_ptr<float>(), out.mutable_data_ptr<float>(), w.data(),
           q.size(0), q.size(1), kv.size(2), kv.size(3), q.size(3), length, (float)scale);
    return out;
}
}  // namespace

TORCH_LIBRARY_IMPL(attnlab, CPU, m) {
    m.impl("quantized_rows", &rows);
    m.impl("decode_attention", &decode_attention);
}

// serve(table, count, threads): the table this thread's calls read from now on (0, 0: none); returns how many
// products this thread's C++ kernel ran since the previous serve (what a test counts)
extern "C" int attnlab_serve(const int64_t* table, int64_t count, int64_t threads) {
    const int done = (int)served.done;
    served.table = table;
    served.count = count;
    served.threads = threads;
    served.done = 0;
    return done;
}
"""


def _flags() -> tuple[str, ...]:
    """The flags that build against the running torch: its headers, its ABI, its two core libraries."""
    root = Path(torch.__file__).resolve().parent
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", 1))
    return ("-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w", "-I", str(root / "include"),
            "-L", str(root / "lib"), "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{root / 'lib'}")


def load():
    """Build (once) and load the C++ library, registering its kernels for attnlab::quantized_rows and
    attnlab::decode_attention on the CPU; -> serve(table address, count, threads). Raises what kernel_build.load
    raises."""
    return kernel_build.load("rows_op", _source(), "attnlab_serve", _flags())


def built() -> bool:
    """Whether load() would find the library built already (no compiler would run)."""
    return kernel_build.built("rows_op", _source(), "attnlab_serve", _flags())


def _source() -> str:
    return f"// built against torch {torch.__version__}\n{SOURCE}"  # another torch: another library


def table(layers: list) -> torch.Tensor:
    """(len(layers), COLUMNS) int64: each layer's row (prepared with prepare_traced); address 0 where its kernel is
    not a tiled one (the Python kernel takes those). The tensors the addresses point into are the layers' own
    `_traced` snapshot: the caller keeps the layers (and so them) alive while the table is served."""
    rows = []
    for layer in layers:
        traced = layer._traced
        entry = [0] * COLUMNS
        if traced is not None and len(traced[1]) == 2:  # tiled: (tiles, bias) packed
            kernel, (tiles, bias) = traced
            # a format with two tile layouts (q4_k_kernel) names the kernel of the layout these tiles are in
            function = (kernel.compiled_for(tiles) if hasattr(kernel, "compiled_for") else kernel._compiled())[0]
            if function is not None:
                entry = [function.__self__.address(), tiles.data_ptr(), 0 if bias is None else bias.data_ptr(),
                         tiles.shape[0], tiles.shape[1], layer.out_features, 0 if bias is None else 1]
        rows.append(entry)
    return torch.tensor(rows, dtype=torch.int64).reshape(len(layers), COLUMNS)
