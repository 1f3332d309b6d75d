#!/usr/bin/python3
"""Reads a pix2pix-h5 file with h5py exactly as docs/data-format.md tells users to, and checks it.

Usage: read_with_h5py.py FILE   (exit 0 when every documented property holds)
"""
import sys

import h5py
import numpy as np

path = sys.argv[1]
with h5py.File(path, "r") as f:
    # Format 2 stores strings fixed-length: h5py gives bytes, UTF-8.
    assert f.attrs["format"].decode() == "pix2pix-h5", f.attrs["format"]
    unpaired = f.attrs["pairing"].decode() == "unpaired"
    # Version 3 only for unpaired files, so that paired ones stay readable by version-2 readers;
    # version 4 only for values beyond 8 bits, which then carry both domains' ranges.
    version = int(f.attrs["version"])
    deep = version == 4
    assert version == (4 if deep else 3 if unpaired else 2), version
    if deep:
        for domain in ("A", "B"):
            lo, hi = f.attrs["range_" + domain]
            assert np.isfinite(lo) and np.isfinite(hi) and lo < hi, (domain, lo, hi)
    assert f.attrs["source"].decode() and f.attrs["pairing"].decode()
    assert "train" in f and "val" in f
    for split in ("train", "val"):
        a, b = f[split]["A"], f[split]["B"]
        paired = not unpaired or f[split].attrs["pairing"].decode() == "paired"
        if unpaired:
            assert f[split].attrs["pairing"].decode() in ("paired", "unpaired")
        types = (np.uint8, np.uint16, np.float32) if deep else (np.uint8,)
        assert a.dtype in types and b.dtype in types, (a.dtype, b.dtype)
        assert a.ndim == 4 and b.ndim == 4
        assert a.shape[1:3] == b.shape[1:3], (a.shape, b.shape)
        assert not paired or a.shape[0] == b.shape[0], (a.shape, b.shape)
        channels = range(1, 17) if deep else (1, 3)
        assert a.shape[3] in channels and b.shape[3] in channels, (a.shape, b.shape)
        assert a.chunks == (1,) + a.shape[1:], a.chunks
        assert a.fletcher32 and b.fletcher32
        n = a.shape[0]
        if paired:
            if "labels" in f[split] or not deep:  # the 8-bit test files have labels
                labels = f[split]["labels"][:]
                assert labels.dtype == np.int32 and labels.shape == (n,) and labels.min() >= 0
        else:
            assert "labels" not in f[split]
            names_b = f[split]["names_B"].asstr()[:]
            assert len(names_b) == b.shape[0] and all(names_b), names_b[:3]
        names = f[split]["names"].asstr()[:]
        assert len(names) == n and all(names), names[:3]
        first = a[0]
        assert first.shape == a.shape[1:] and first.max() > first.min()
    print(f"h5py read {path}: train {f['train']['A'].shape} and {f['train']['B'].shape}, "
          f"val {f['val']['A'].shape}, first names {list(f['train']['names'].asstr()[:2])}")
