// State dicts saved by Python's torch.save (`torch.save(net.state_dict(), "latest_net_G.pth")`):
// the zip archive of PyTorch >= 1.6, read with LibTorch's own reader and unpickler.
//
// Note [OrderedDict state dicts]: a state dict is a collections.OrderedDict with a `_metadata`
// attribute. LibTorch 1.13's unpickler turns OrderedDict into None (it expects one only as a
// tensor's empty backward-hook table) and lacks the SETITEM opcode `_metadata` uses, so
// torch::pickle_load fails on every such file (pytorch/pytorch#100741; later LibTorch reads
// OrderedDict as a dict). Before unpickling, the pickle is rewritten opcode by opcode: an
// OrderedDict built from no arguments becomes an empty dict, and the top-level dict's `_metadata`
// state (its BUILD) is dropped. Nothing else changes: tensors, storages and names are LibTorch's.
// The walk also refuses what would make LibTorch's unpickler allocate without bound (memo indices
// beyond those Python numbers consecutively), and every tensor is checked to lie in its storage.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace pix2pix::interop {

// Name → tensor in file order (CPU tensors).
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

// Error naming `path` when it is missing, not a torch.save zip archive, damaged, or not a dict of
// names to tensors.
StateDict read_torch_state_dict(const std::string& path);

// The rewrite (See Note [OrderedDict state dicts]) on the bytes of a protocol-2 pickle. Error (naming
// `what`) for an opcode it does not know or a pickle that ends early.
std::string pickle_without_ordered_dicts(const std::string& pickle, const std::string& what);

}  // namespace pix2pix::interop
