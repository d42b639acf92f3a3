"""PyTorch eager's training step for the zoo models that mirror torchvision
and HuggingFace transformers (resnet50, vgg16, gpt2): float32, with TF32 off
(--precision fp32, the default) or on for matmuls and cuDNN (--precision
tf32), as `autopar run --precision` runs; SGD with momentum 0.9 (as
`autopar run`), random inputs and labels.  Prints one CSV row:
model,batch,device,median_ms,samples_per_s,precision; --times-csv FILE
also writes every timed step's time as `autopar run --times-csv` does
(step,iter_ms; steps numbered from the first warm-up step), which
bench/torch-peer pools over its rounds.  Used by bench/torch-peer; needs
python3 with torch (and torchvision, transformers) and a CUDA GPU (or
--device cpu)."""
import argparse
import statistics

import torch


def build(name, batch, dev):
    if name in ("resnet50", "vgg16"):
        import torchvision
        net = getattr(torchvision.models, name)(num_classes=1000)
        x = torch.randn(batch, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (batch,), device=dev)
        net = net.to(dev)
        lossf = torch.nn.CrossEntropyLoss()
        return net, lambda: lossf(net(x), y)
    if name == "gpt2":
        import transformers
        net = transformers.GPT2LMHeadModel(transformers.GPT2Config()).to(dev)
        ids = torch.randint(0, 50257, (batch, 1024), device=dev)
        return net, lambda: net(input_ids=ids, labels=ids).loss
    raise SystemExit(f"torch_peer: no PyTorch model for {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--times-csv", default=None)
    ap.add_argument("--precision", choices=("fp32", "tf32"), default="fp32")
    a = ap.parse_args()
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    dev = torch.device(a.device)
    net, loss = build(a.model, a.batch, dev)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    cuda = dev.type == "cuda"
    times = []
    for i in range(a.warmup + a.steps):
        if cuda:
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0.record()
        else:
            import time
            s = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        l = loss()
        l.backward()
        opt.step()
        if cuda:
            t1.record()
            torch.cuda.synchronize()
            ms = t0.elapsed_time(t1)
        else:
            ms = (time.perf_counter() - s) * 1e3
        if not torch.isfinite(l):
            raise SystemExit(f"torch_peer: {a.model}: loss is {l.item()}")
        if i >= a.warmup:
            times.append(ms)
    if a.times_csv:
        with open(a.times_csv, "w", encoding="utf-8") as f:
            f.write("step,iter_ms\n")
            for i, ms in enumerate(times):
                f.write("%d,%r\n" % (a.warmup + i, ms))
    med = statistics.median(times)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    print(f"{a.model},{a.batch},{name},{med:.4f},{a.batch * 1e3 / med:.2f},{a.precision}")


if __name__ == "__main__":
    main()
