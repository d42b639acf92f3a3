#!/usr/bin/env python3
# The CPU PyTorch peer of `autopar run` (bench/torch-peer-cpu): builds the
# network of an autopar model file from the file itself (models/FORMAT.md),
# with autopar's parameter layout (runtime/params.h: per op, the weight
# blocks [out][fan-in] then the biases; attention's q, k, v and output
# projections; layernorm's gamma then beta; an embedding's [vocab][out]
# table) and the semantics of autopar's CPU kernels (exact-erf GELU,
# layernorm eps 1e-5, average pooling counting the padding, softmax
# cross-entropy averaged over every position of the batch), and
#
#   time MODEL [-b B] [--ranks R] [--steps N] [--warmup W] [--times-csv F]
#       trains with SGD with momentum (autopar run's defaults: lr 0.02,
#       momentum 0.9) on one thread per process and prints the median step
#       after warm-up and samples/s; with --ranks 2, DistributedDataParallel
#       over gloo in 2 processes, each with half the batch, the step time
#       being the slower rank's (as autopar's dp plan on cpu-1x2);
#       --times-csv writes every timed step's time as `autopar run
#       --times-csv` does (step,iter_ms; steps numbered from the first
#       warm-up step), for bench/torch-peer-cpu to pool with other rounds;
#   compare MODEL DUMP [--tolerance X]
#       loads the initial weights and first batch that `autopar run --dump`
#       wrote (runtime/dump.h), runs one forward and backward in float64
#       and in float32, and compares the loss and every parameter's
#       gradient of autopar and of PyTorch's float32 with float64: relative
#       difference max|a - b| / max|b| per tensor; exit 1 where autopar's
#       loss, or its largest gradient difference, is above both the
#       tolerance (default 1e-4: float32 sums in another order) and twice
#       PyTorch's own float32 one (a deep network at a small batch can lose
#       far more than one sum's round-off: resnet50 at batch 2 does).
#
# MODEL is a model file or a name under models/.  Token ids are drawn below
# the vocabulary of the embedding that reads them; labels below the classes.
import argparse
import datetime
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

KINDS = ("n", "c", "h", "w", "l")


def die(msg, code=2):
    sys.stderr.write("torch_peer_cpu: %s\n" % msg)
    sys.exit(code)


def size2(v):
    a = v.split("x")
    return (int(a[0]), int(a[-1]))


# ---- the model file -------------------------------------------------------

class Op:
    def __init__(self, kind, name, ins, attrs, line):
        self.kind, self.name, self.ins, self.attrs, self.line = kind, name, ins, attrs, line
        self.dims = None   # the kinds of the output's dims, memory order
        self.sizes = None  # their sizes (n as None)


def parse_op(raw, line, block_in):
    tok = raw.split()
    attrs, ins = {}, []
    for t in tok[2:]:
        if "=" in t:
            k, v = t.split("=", 1)
            attrs[k] = v.strip('"')
        else:
            ins.append(block_in if t == "@in" else t)
    return Op(tok[0], tok[1], ins, attrs, line)


def parse_model(path):
    """(name, batch, ops) of a model file, its repeat blocks unrolled."""
    text = [t.split("#", 1)[0].strip() for t in open(path, encoding="utf-8")]
    ops, name, batch, i = [], None, None, 0
    while i < len(text):
        raw, i = text[i], i + 1
        tok = raw.split()
        if not tok:
            continue
        if tok[0] == "model":
            name = tok[1]
        elif tok[0] == "batch":
            batch = int(tok[1])
        elif tok[0] == "init":
            # autopar's scheme of initial weights: compare loads those
            # weights, and time compares step times only
            pass
        elif tok[0] == "repeat":
            body = []
            while text[i] != "end":
                if text[i]:
                    body.append((text[i], i + 1))
                i += 1
            i += 1
            for it in range(int(tok[1])):
                # @in: the last op of the previous iteration (or before)
                block_in = ops[-1].name
                for b, ln in body:
                    ops.append(parse_op(b.replace("{i}", str(it)), ln, block_in))
        else:
            ops.append(parse_op(raw, i, None))
    return name, batch, ops


def window_out(o, x):
    """[h, w] of a convolution's or pooling's output, PyTorch's rule."""
    a = o.attrs
    if o.kind == "adaptive_avgpool":
        return [int(a["out"])] * 2
    k = size2(a["k"])
    st = size2(a.get("stride", "1" if o.kind == "conv2d" else a["k"]))
    pd = size2(a.get("pad", "0"))
    out = []
    for q in range(2):
        span = x.sizes[2 + q] + 2 * pd[q] - k[q]
        if a.get("ceil", "0") != "0":
            n = -(-span // st[q]) + 1
            if (n - 1) * st[q] >= x.sizes[2 + q] + pd[q]:
                n -= 1  # the last window must start inside the input
        else:
            n = span // st[q] + 1
        out.append(n)
    return out


def infer_dims(ops):
    """The kinds and sizes (n left as None) of every op's output."""
    by = {}
    for o in ops:
        x = by[o.ins[0]] if o.ins else None
        a = o.attrs
        if o.kind == "input":
            o.dims = ["n"] + [k for k in a if k in KINDS]
            o.sizes = [None] + [int(a[k]) for k in a if k in KINDS]
        elif o.kind in ("conv2d", "maxpool", "avgpool", "adaptive_avgpool"):
            c = int(a["out"]) if o.kind == "conv2d" else x.sizes[1]
            o.dims, o.sizes = ["n", "c", "h", "w"], [None, c] + window_out(o, x)
        elif o.kind == "linear":
            ci = x.dims.index("c")
            o.dims, o.sizes = list(x.dims), list(x.sizes)
            o.sizes[ci] = int(a["out"])
        elif o.kind == "embedding":
            o.dims, o.sizes = x.dims + ["c"], x.sizes + [int(a["out"])]
        elif o.kind == "loss":
            ci = x.dims.index("c")
            o.dims = [d for d in x.dims if d != "c"]
            o.sizes = [s for d, s in zip(x.dims, x.sizes) if d != "c"]
        elif o.kind == "flatten":
            o.dims, o.sizes = ["n", "c"], [None, math.prod(x.sizes[1:])]
        elif o.kind == "reshape":
            o.dims = ["n"] + [k for k in a if k in KINDS]
            o.sizes = [None] + [int(a[k]) for k in a if k in KINDS]
        elif o.kind == "concat":
            di = x.dims.index(a.get("dim", "c"))
            o.dims, o.sizes = list(x.dims), list(x.sizes)
            o.sizes[di] = sum(by[i].sizes[di] for i in o.ins)
        elif o.kind in ("relu", "gelu", "tanh", "sigmoid", "dropout", "add", "mul",
                        "batchnorm", "layernorm", "softmax", "attention", "matmul"):
            o.dims, o.sizes = list(x.dims), list(x.sizes)
        else:
            die("%s line %d: operator '%s' is not supported by the peer" % (o.name, o.line, o.kind))
        by[o.name] = o
    return by


# ---- the network ----------------------------------------------------------

def param_shapes(o, by):
    """(name, shape) of op o's parameters in autopar's order."""
    x = by[o.ins[0]] if o.ins else None
    a, bias = o.attrs, o.attrs.get("bias", "1") != "0"
    if o.kind == "linear":
        if "tie" in a:
            return []
        cin, cout = x.sizes[x.dims.index("c")], int(a["out"])
        return [("weight", (cout, cin))] + ([("bias", (cout,))] if bias else [])
    if o.kind == "conv2d":
        kh, kw = size2(a["k"])
        g = int(a.get("groups", 1))
        cin, cout = x.sizes[1], int(a["out"])
        return [("weight", (cout, cin // g, kh, kw))] + ([("bias", (cout,))] if bias else [])
    if o.kind == "attention":
        c = x.sizes[x.dims.index("c")]
        w = [("w" + p, (c, c)) for p in "qkvo"]
        return w + ([("b" + p, (c,)) for p in "qkvo"] if bias else [])
    if o.kind in ("layernorm", "batchnorm"):
        c = x.sizes[x.dims.index("c")]
        return [("weight", (c,)), ("bias", (c,))]
    if o.kind == "embedding":
        return [("weight", (int(a["vocab"]), int(a["out"])))]
    return []


class Net(torch.nn.Module):
    def __init__(self, ops, by):
        super().__init__()
        self.ops, self.by = ops, by
        self.shapes = {}
        self.p = torch.nn.ParameterDict()
        for o in ops:
            shapes = param_shapes(o, by)
            self.shapes[o.name] = shapes
            for pn, sh in shapes:
                bound = 1.0 / math.sqrt(max(1, math.prod(sh[1:])))
                if o.kind in ("layernorm", "batchnorm"):
                    t = torch.ones(sh) if pn == "weight" else torch.zeros(sh)
                elif o.kind == "embedding":
                    t = torch.randn(sh)
                else:
                    t = (torch.rand(sh) * 2 - 1) * bound
                self.p[key(o.name, pn)] = torch.nn.Parameter(t)
        # every input gets its data; loss ops their labels
        self.inputs = [o for o in ops if o.kind == "input"]
        self.losses = [o for o in ops if o.kind == "loss"]

    def param(self, op, pn):
        return self.p[key(op, pn)]

    def load_flat(self, name, flat):
        """op name's parameters from autopar's flat layout."""
        at = 0
        for pn, sh in self.shapes[name]:
            n = math.prod(sh)
            with torch.no_grad():
                self.param(name, pn).copy_(flat[at:at + n].view(sh))
            at += n
        if at != flat.numel():
            die("'%s': %d parameters in the dump, %d in the peer" % (name, flat.numel(), at), 1)

    def flat_grad(self, name):
        return torch.cat([self.param(name, pn).grad.reshape(-1) for pn, _ in self.shapes[name]])

    def forward(self, data, labels):
        t = {}
        total = None
        for o in self.ops:
            xs = [t[i] for i in o.ins]
            a = o.attrs
            t[o.name] = y = run_op(self, o, xs, a, data, labels)
            if o.kind == "loss":
                total = y if total is None else total + y
        return total


def key(op, pn):
    return (op + "/" + pn).replace(".", "_")


def run_op(net, o, xs, a, data, labels):
    x = xs[0] if xs else None
    k = o.kind
    if k == "input":
        return data[o.name]
    if k == "linear":
        if "tie" in a:
            return F.linear(x, net.param(a["tie"], "weight"))
        return F.linear(x, net.param(o.name, "weight"),
                        net.p[key(o.name, "bias")] if key(o.name, "bias") in net.p else None)
    if k == "conv2d":
        st = size2(a.get("stride", "1"))
        pd = size2(a.get("pad", "0"))
        b = net.p[key(o.name, "bias")] if key(o.name, "bias") in net.p else None
        return F.conv2d(x, net.param(o.name, "weight"), b, st, pd, 1, int(a.get("groups", 1)))
    if k in ("maxpool", "avgpool"):
        kk = size2(a["k"])
        st = size2(a.get("stride", a["k"]))
        pd = size2(a.get("pad", "0"))
        ceil = a.get("ceil", "0") != "0"
        if k == "maxpool":
            return F.max_pool2d(x, kk, st, pd, ceil_mode=ceil)
        return F.avg_pool2d(x, kk, st, pd, ceil_mode=ceil, count_include_pad=True)
    if k == "adaptive_avgpool":
        return F.adaptive_avg_pool2d(x, int(a["out"]))
    if k == "relu":
        return F.relu(x)
    if k == "gelu":
        return F.gelu(x)
    if k == "tanh":
        return torch.tanh(x)
    if k == "sigmoid":
        return torch.sigmoid(x)
    if k == "dropout":
        return F.dropout(x, float(a.get("p", 0.5)), training=True)
    if k == "add":
        return sum(xs[1:], xs[0])
    if k == "mul":
        y = xs[0]
        for z in xs[1:]:
            y = y * z
        return y
    if k == "concat":
        return torch.cat(xs, dim=net.by[o.ins[0]].dims.index(a.get("dim", "c")))
    if k == "flatten":
        return x.flatten(1)
    if k == "reshape":
        return x.reshape([x.shape[0]] + o.sizes[1:])
    if k == "batchnorm":
        return F.batch_norm(x, None, None, net.param(o.name, "weight"),
                            net.param(o.name, "bias"), training=True, eps=1e-5)
    if k == "layernorm":
        return F.layer_norm(x, x.shape[-1:], net.param(o.name, "weight"),
                            net.param(o.name, "bias"), eps=1e-5)
    if k == "softmax":
        d = a.get("dim")
        return F.softmax(x, dim=-1 if d is None else net.by[o.ins[0]].dims.index(d))
    if k == "embedding":
        return F.embedding(x.long(), net.param(o.name, "weight"))
    if k == "matmul":
        b = xs[1].transpose(-1, -2) if a.get("trans_b", "0") != "0" else xs[1]
        return torch.matmul(x, b)
    if k == "attention":
        return attention(net, o, x, xs[1] if len(xs) > 1 else x, a)
    if k == "loss":
        ci = net.by[o.ins[0]].dims.index("c")
        z = x.movedim(ci, -1)
        # autopar caps -log p at 69.08 (p below 1e-30); never reached here
        return F.cross_entropy(z.reshape(-1, z.shape[-1]), labels[o.name].reshape(-1))
    die("operator '%s' is not supported by the peer" % k)


def attention(net, o, q_in, kv_in, a):
    """Multi-head attention, (n, l, c), heads splitting c in order."""
    h = int(a["heads"])
    n, lq, c = q_in.shape
    lk = kv_in.shape[1]
    bias = key(o.name, "bq") in net.p

    def proj(x, p):
        return F.linear(x, net.param(o.name, "w" + p), net.param(o.name, "b" + p) if bias else None)

    q = proj(q_in, "q").view(n, lq, h, c // h).transpose(1, 2)
    k = proj(kv_in, "k").view(n, lk, h, c // h).transpose(1, 2)
    v = proj(kv_in, "v").view(n, lk, h, c // h).transpose(1, 2)
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(c // h))
    if a.get("causal", "0") != "0":
        mask = torch.ones(lq, lk, dtype=torch.bool).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    ctx = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(n, lq, c)
    return proj(ctx, "o")


# ---- data -----------------------------------------------------------------

def id_ranges(ops):
    r = {}
    for o in ops:
        if o.kind == "embedding":
            v = int(o.attrs["vocab"])
            r[o.ins[0]] = min(v, r.get(o.ins[0], v))
    return r


def random_batch(net, batch, gen):
    """Inputs and labels like autopar's: values in [-1, 1), ids below the
    vocabulary, labels below the classes."""
    ids = id_ranges(net.ops)
    data, labels = {}, {}
    for o in net.inputs:
        shape = [batch] + o.sizes[1:]
        if o.name in ids:
            data[o.name] = torch.randint(0, ids[o.name], shape, generator=gen)
        else:
            data[o.name] = torch.rand(shape, generator=gen) * 2 - 1
    for o in net.losses:
        x = net.by[o.ins[0]]
        classes = x.sizes[x.dims.index("c")]
        shape = [batch] + [s for s in o.sizes[1:]]
        labels[o.name] = torch.randint(0, classes, shape, generator=gen)
    return data, labels


def resolve(model):
    if os.path.exists(model):
        return model
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.environ.get("AUTOPAR_DATA", ""), os.path.join(here, "..")):
        p = os.path.join(root, "models", model + ".model")
        if root and os.path.exists(p):
            return p
    die("no model '%s' (a file, or a name under models/)" % model)


def build(model):
    name, batch, ops = parse_model(resolve(model))
    by = infer_dims(ops)
    return name, batch, Net(ops, by)


# ---- compare with autopar's first step -------------------------------------

def read_dump(path):
    """(header dict, [(what, name, tensor)]) of an `autopar run --dump` file."""
    with open(path, "rb") as f:
        head, tensors = {}, []
        if f.readline().split() != [b"autopar-dump", b"1"]:
            die("'%s': not an autopar dump (version 1)" % path)
        while True:
            tok = f.readline().decode().split()
            if not tok:
                die("'%s': the header has no end" % path)
            if tok[0] == "end":
                break
            if tok[0] == "tensor":
                tensors.append((tok[1], tok[2], int(tok[3])))
            else:
                head[tok[0]] = tok[1]
        out = []
        for what, name, n in tensors:
            b = f.read(4 * n)
            if len(b) != 4 * n:
                die("'%s': tensor '%s' is cut short" % (path, name))
            out.append((what, name, torch.frombuffer(bytearray(b), dtype=torch.float32)))
    return head, out


def rel_diff(a, b):
    """check.c's check_rel_diff(): max |a - b| / max |b|."""
    a, b = a.double(), b.double()
    scale = b.abs().max().item()
    d = (a - b).abs().max().item()
    return d / scale if scale > 0 else d


def first_step(model, head, tensors, dtype):
    """PyTorch's loss and gradients (float64) of the dump's first step, with
    the dump's weights and batch, computed in dtype."""
    name, _, net = build(model)
    if head.get("model") != name:
        die("the dump is of '%s', not '%s'" % (head.get("model"), name))
    batch = int(head["batch"])
    data, labels, names = {}, {}, []
    for what, tname, t in tensors:
        op = net.by.get(tname)
        if op is None:
            die("the dump's '%s' is not an op of '%s'" % (tname, name))
        if what == "input":
            d = t.view([batch] + op.sizes[1:])
            data[tname] = d.long() if tname in id_ranges(net.ops) else d.to(dtype)
        elif what == "labels":
            labels[tname] = t.long()
        elif what == "param":
            net.load_flat(tname, t)
        elif what == "grad":
            names.append(tname)
    net.to(dtype)
    loss = net(data, labels)
    loss.backward()
    return loss.item(), {n: net.flat_grad(n).detach().double() for n in names}


def compare(args):
    head, tensors = read_dump(args.dump)
    mine = {tname: t for what, tname, t in tensors if what == "grad"}
    ref = float(head["loss"])
    l64, g64 = first_step(args.model, head, tensors, torch.float64)
    l32, g32 = first_step(args.model, head, tensors, torch.float32)
    name = head["model"]
    # float32's own error, PyTorch's float32 against its float64: a deep
    # network's gradients can lose far more than the 1e-7 of one sum
    dl, fl = abs(ref - l64) / abs(l64), abs(l32 - l64) / abs(l64)
    print("%s: loss autopar %.9g, torch %.9g; against float64: autopar %.3g, torch float32 %.3g"
          % (name, ref, l32, dl, fl))
    worst, where, floor = 0.0, "-", 0.0
    for tname, g in g64.items():
        d, f = rel_diff(mine[tname], g), rel_diff(g32[tname], g)
        if args.verbose:
            print("  grad %-24s autopar %.3g  torch float32 %.3g" % (tname, d, f))
        if not d <= worst:
            worst, where = d, tname
        floor = max(floor, f)
    print("%s: %d gradients against float64, largest relative difference: autopar %.3g (%s), "
          "torch float32 %.3g" % (name, len(g64), worst, where, floor))
    if not dl <= max(args.tolerance, 2 * fl):
        die("%s: the loss differs from float64 by %.3g, above the tolerance %.3g and twice "
            "PyTorch's own float32 difference" % (name, dl, args.tolerance), 1)
    if not worst <= max(args.tolerance, 2 * floor):
        die("%s: '%s' differs from float64 by %.3g, above the tolerance %.3g and twice "
            "PyTorch's own largest float32 difference %.3g"
            % (name, where, worst, args.tolerance, floor), 1)


# ---- timing ---------------------------------------------------------------

def train_steps(net, batches, steps, warmup, lr, momentum, barrier=None, reduce_max=None):
    """Step times (s) after warm-up: forward, backward, SGD with momentum."""
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    times, losses = [], []
    for s in range(warmup + steps):
        data, labels = batches[s % len(batches)]
        if barrier:
            barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = net(data, labels)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if reduce_max:
            dt = reduce_max(dt)
        losses.append(loss.item())
        if s >= warmup:
            times.append(dt)
    return times, losses


def one_thread():
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass


def report(model, batch, ranks, times, losses, warmup, times_csv):
    if times_csv:
        with open(times_csv, "w", encoding="utf-8") as f:
            f.write("step,iter_ms\n")
            for s, t in enumerate(times):
                f.write("%d,%r\n" % (warmup + s, t * 1e3))
    med = statistics.median(times)
    print("%s: batch %d on %d rank%s, torch %s: loss %.4f -> %.4f, median step %.3f ms,"
          " %.1f samples/s" % (model, batch, ranks, "" if ranks == 1 else "s",
                               torch.__version__, losses[0], losses[-1], med * 1e3,
                               batch / med))
    print("samples_per_s %.6g" % (batch / med), flush=True)


def worker(rank, args, port):
    import torch.distributed as dist

    one_thread()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks,
                            timeout=datetime.timedelta(seconds=300))
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    name, batch, net = build(args.model)
    batch = args.batch or batch
    gen = torch.Generator().manual_seed(args.seed + 1 + rank)
    batches = [random_batch(net, batch // args.ranks, gen) for _ in range(4)]
    ddp = torch.nn.parallel.DistributedDataParallel(net)

    def reduce_max(dt):
        t = torch.tensor([dt], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    times, losses = train_steps(ddp, batches, args.steps, args.warmup, args.lr, args.momentum,
                                dist.barrier, reduce_max)
    if rank == 0:
        report(name, batch, args.ranks, times, losses, args.warmup, args.times_csv)
    dist.barrier()
    sys.stdout.flush()
    # no destroy_process_group(): gloo's teardown can hang a rank that
    # exits after its peer; the processes end here
    os._exit(0)


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timing(args):
    name, batch, net = build(args.model)
    batch = args.batch or batch
    if batch % args.ranks:
        die("batch %d does not split into %d ranks" % (batch, args.ranks))
    if args.ranks == 1:
        one_thread()
        torch.manual_seed(args.seed)
        name, _, net = build(args.model)
        gen = torch.Generator().manual_seed(args.seed + 1)
        batches = [random_batch(net, batch, gen) for _ in range(4)]
        times, losses = train_steps(net, batches, args.steps, args.warmup, args.lr,
                                    args.momentum)
        report(name, batch, 1, times, losses, args.warmup, args.times_csv)
    else:
        import torch.multiprocessing as mp

        mp.start_processes(worker, args=(args, free_port()), nprocs=args.ranks,
                           start_method="spawn")


def main():
    ap = argparse.ArgumentParser(prog="torch_peer_cpu.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time", help="time training steps")
    t.add_argument("model")
    t.add_argument("-b", "--batch", type=int, default=0)
    t.add_argument("--ranks", type=int, default=1, choices=(1, 2, 4))
    t.add_argument("--steps", type=int, default=20)
    t.add_argument("--warmup", type=int, default=3)
    t.add_argument("--lr", type=float, default=0.02)
    t.add_argument("--momentum", type=float, default=0.9)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--times-csv", default=None)
    c = sub.add_parser("compare", help="compare the first step with an autopar dump")
    c.add_argument("model")
    c.add_argument("dump")
    c.add_argument("--tolerance", type=float, default=1e-4)
    c.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.cmd == "time":
        if args.steps < 1 or args.warmup < 0:
            die("expected --steps >= 1 and --warmup >= 0")
        timing(args)
    else:
        one_thread()
        torch.manual_seed(0)
        compare(args)


if __name__ == "__main__":
    main()
