"""The reference side of tests/infer/fid_kid_test.sh.

  fid_reference.py nets DIR          writes the TorchScript feature networks the test uses
  fid_reference.py check EVAL DUMP H5 SPLIT NET   recomputes FID/KID with NumPy/SciPy from the
                                     dumped features, and the real features from the HDF5 file
                                     with PyTorch, and compares them with evaluation.json
"""
import json
import sys

import numpy as np


def nets(out):
    import torch

    torch.manual_seed(7)

    class Features(torch.nn.Module):
        """3 input channels (grey images are repeated to them), 6 features."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 6, 3, stride=2)
            self.mix = torch.nn.Linear(6, 6)

        def forward(self, x):
            h = torch.tanh(self.conv(x)).mean(dim=(2, 3))
            return self.mix(h)

    class WithReturnFeatures(torch.nn.Module):
        """The clean-fid Inception's calling convention: [0, 255] input, return_features."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 5, 3)

        def forward(self, x, return_features: bool = False):
            h = torch.tanh(self.conv(x / 128.0 - 1.0)).mean(dim=(2, 3))
            if return_features:
                return h
            return h.sum(dim=1, keepdim=True)

    class NotTwoD(torch.nn.Module):
        def forward(self, x):
            return x[:, :, :2, :2]

    class Nan(torch.nn.Module):
        def forward(self, x):
            return x.mean(dim=(2, 3)) * float("nan")

    torch.jit.save(torch.jit.script(Features().eval()), f"{out}/features.pt")
    torch.jit.save(torch.jit.script(WithReturnFeatures().eval()), f"{out}/return_features.pt")
    torch.jit.save(torch.jit.script(NotTwoD()), f"{out}/not_2d.pt")
    class Wide(torch.nn.Module):
        """512 features: KID over hundreds of images then takes about 10 ms a subset."""

        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 6, 3, stride=2)
            self.wide = torch.nn.Linear(6, 512)

        def forward(self, x):
            return self.wide(torch.tanh(self.conv(x)).mean(dim=(2, 3)))

    class NoFeatures(torch.nn.Module):
        def forward(self, x):
            return x.flatten(1)[:, :0]

    torch.jit.save(torch.jit.script(Nan()), f"{out}/nan.pt")
    torch.jit.save(torch.jit.script(NoFeatures()), f"{out}/no_features.pt")
    torch.jit.save(torch.jit.script(Wide().eval()), f"{out}/wide.pt")


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def check(evaluation, dump, h5, split, net):
    import h5py
    import scipy.linalg
    import torch

    result = json.load(open(evaluation))
    real = np.load(f"{dump}/real.npy").astype(np.float64)
    generated = np.load(f"{dump}/generated.npy").astype(np.float64)
    assert real.shape == generated.shape and real.shape[0] == result["images"], (real.shape, result["images"])
    assert real.shape[1] == result["features"]["dimensions"]

    # The real features: the network run here by PyTorch on the file's B images, grey repeated to
    # three channels, on [-1, 1] (the test's --features-input signed).
    with h5py.File(h5, "r") as f:
        b = f[f"{split}/B"][...]  # uint8 [n, H, W, C]
    x = torch.from_numpy(b).permute(0, 3, 1, 2).float().repeat(1, 3, 1, 1) / 127.5 - 1.0
    with torch.no_grad():
        expected = torch.jit.load(net)(x).double().numpy()
    gap = np.abs(expected - real).max()
    assert gap < 1e-4, f"real features differ from PyTorch's by {gap}"

    # FID as clean-fid and pytorch-fid compute it.
    mu1, mu2 = real.mean(0), generated.mean(0)
    s1, s2 = np.cov(real, rowvar=False), np.cov(generated, rowvar=False)
    covmean, _ = scipy.linalg.sqrtm(s1.dot(s2), disp=False)
    fid = float(((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean.real))
    assert relative(result["fid"], fid) <= 1e-3, f"FID {result['fid']} vs SciPy {fid}"

    # KID with one subset of every image (the test's --kid-subset-size >= n): no sampling.
    m, d = real.shape
    kernel = lambda a, c: (a @ c.T / d + 1) ** 3
    kxx, kyy, kxy = kernel(generated, generated), kernel(real, real), kernel(generated, real)
    kid = ((kxx.sum() - np.trace(kxx)) + (kyy.sum() - np.trace(kyy))) / (m * (m - 1)) - 2 * kxy.sum() / m**2
    assert result["kid"]["subset_size"] == m, result["kid"]
    assert relative(result["kid"]["mean"], kid) <= 1e-3, f"KID {result['kid']['mean']} vs NumPy {kid}"
    print(f"fid {result['fid']:.6f} scipy {fid:.6f}; kid {result['kid']['mean']:.6g} numpy {kid:.6g}; "
          f"real features within {gap:.2g} of PyTorch's")


if __name__ == "__main__":
    if sys.argv[1] == "nets":
        nets(sys.argv[2])
    else:
        check(*sys.argv[2:7])
