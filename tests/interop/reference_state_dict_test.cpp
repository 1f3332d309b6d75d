// Import of reference state dicts: what the reference saves (torch.save of an OrderedDict, written
// here by PyTorch itself through tests/infer/reference_check.py) is read, its U-Net's shape found,
// and it computes in LibTorch what it computes in PyTorch; damaged and foreign files are refused by
// name, and the pickle rewrite refuses what it does not know.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/interop/pytorch_export.hpp"
#include "pix2pix/interop/reference_state_dict.hpp"
#include "pix2pix/interop/torch_save_reader.hpp"
#include "support/fixtures.hpp"
#include "support/torch_files.hpp"

using namespace pix2pix;
using pix2pix::fixtures::load_generator_error;
using pix2pix::fixtures::TempDir;

namespace {

const std::string kScript = std::string(PIX2PIX_SOURCE_DIR) + "/tests/infer/reference_check.py";

// PyTorch saves a random reference generator of `o`'s shape (and its output on `input_path`).
fixtures::CommandResult save_reference(const nets::GeneratorOptions& o, const std::string& path,
                                       const std::string& input_path, const std::string& output_path,
                                       const std::string& damage = "") {
  return fixtures::run_shell(fixtures::reference_python() + kScript + " --norm " + nets::to_string(o.norm) +
                             " --in-channels " + std::to_string(o.in_channels) + " --out-channels " +
                             std::to_string(o.out_channels) + " --num-downs " + std::to_string(o.num_downs) +
                             " --ngf " + std::to_string(o.ngf) + " --seed 4 --save-generator " + path + " --input " +
                             input_path + " --output " + output_path + (damage.empty() ? "" : " --damage " + damage));
}

}  // namespace

TEST(ReferenceImport, WhatTheReferenceSavesComputesHereWhatItComputesThere) {
  TempDir dir;
  for (const nets::GeneratorOptions& o : {nets::GeneratorOptions{1, 3, 6, 4, nets::Norm::batch, true},
                                          nets::GeneratorOptions{3, 3, 5, 4, nets::Norm::instance, true}}) {
    SCOPED_TRACE("norm " + nets::to_string(o.norm));
    torch::manual_seed(2);
    const torch::Tensor a = torch::rand({2, o.in_channels, 64, 64}) * 2 - 1;
    fixtures::save_tensor(dir / "a.pt", a);
    const auto r = save_reference(o, dir / "latest_net_G.pth", dir / "a.pt", dir / "fake.pt");
    ASSERT_EQ(r.status, 0) << r.output;
    // LibTorch 1.13's own reader cannot take it (See Note [OrderedDict state dicts]); ours can.
    EXPECT_THROW(torch::pickle_load(fixtures::file_bytes(dir / "latest_net_G.pth")), c10::Error);
    auto saved = checkpoint::load_generator(dir / "latest_net_G.pth", torch::kCPU);
    const auto& got = saved.generator->options();
    EXPECT_EQ(got.in_channels, o.in_channels);
    EXPECT_EQ(got.out_channels, o.out_channels);
    EXPECT_EQ(got.num_downs, o.num_downs);
    EXPECT_EQ(got.ngf, o.ngf);
    EXPECT_EQ(got.norm, o.norm);
    EXPECT_FALSE(saved.generator->is_training());
    EXPECT_EQ(saved.trained_on.height, 0);  // not recorded in a state dict
    torch::NoGradGuard no_grad;
    const torch::Tensor fake = fixtures::load_tensor(dir / "fake.pt");
    EXPECT_LE((saved.generator->forward(a) - fake).abs().max().item<double>(), 1e-5);
  }
}

TEST(ReferenceImport, OurExportReadsBackAsTheSameNetwork) {
  TempDir dir;
  torch::manual_seed(6);
  nets::UnetGenerator g(nets::GeneratorOptions{1, 1, 5, 8, nets::Norm::batch, true});
  nets::init_weights(*g);
  g->train();
  g->forward(torch::rand({2, 1, 32, 32}));  // running statistics that are not the initial ones
  g->eval();
  interop::write_state_dict(dir / "g.pth", *g);
  auto saved = checkpoint::load_generator(dir / "g.pth", torch::kCPU);
  const torch::Tensor a = torch::rand({3, 1, 32, 32}) * 2 - 1;
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(saved.generator->forward(a), g->forward(a)));
}

TEST(ReferenceImport, DamagedAndForeignFilesAreRefusedByName) {
  TempDir dir;
  const nets::GeneratorOptions o{1, 1, 5, 4, nets::Norm::batch, true};
  fixtures::save_tensor(dir / "a.pt", torch::zeros({1, 1, 32, 32}));
  struct Damage {
    std::string kind, message;
  };
  for (const Damage& d : {Damage{"missing", "has no model.model.3.bias, which the network needs"},
                          Damage{"extra", "holds model.model.9.weight, which the network does not have"},
                          Damage{"shape", "model.model.3.bias is [2], the network needs [1]"}}) {
    const std::string path = dir / (d.kind + ".pth");
    const auto r = save_reference(o, path, dir / "a.pt", dir / "out.pt", d.kind);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_NE(load_generator_error(path).find(path), std::string::npos) << load_generator_error(path);
    EXPECT_NE(load_generator_error(path).find(d.message), std::string::npos) << load_generator_error(path);
  }
  std::ofstream(dir / "text.pth") << "not a zip archive";
  EXPECT_NE(load_generator_error(dir / "text.pth").find(dir / "text.pth" + " is not a state dict torch.save wrote"),
            std::string::npos)
      << load_generator_error(dir / "text.pth");
  const auto good = fixtures::file_bytes(dir / "missing.pth");
  std::ofstream(dir / "short.pth", std::ios::binary).write(good.data(), static_cast<std::streamsize>(good.size() / 2));
  EXPECT_NE(load_generator_error(dir / "short.pth").find(dir / "short.pth"), std::string::npos)
      << load_generator_error(dir / "short.pth");
  fixtures::save_tensor(dir / "tensor.pth", torch::zeros({3}));
  EXPECT_NE(load_generator_error(dir / "tensor.pth").find("not a dict of names to tensors"), std::string::npos)
      << load_generator_error(dir / "tensor.pth");
  // A discriminator's state dict where a generator's belongs.
  nets::PatchDiscriminator discriminator(nets::DiscriminatorOptions{2, 4, 2, nets::Norm::batch});
  interop::write_state_dict(dir / "d.pth", *discriminator);
  EXPECT_NE(load_generator_error(dir / "d.pth").find("has no 4-d model.model.0.weight"), std::string::npos)
      << load_generator_error(dir / "d.pth");
  // A missing file.
  EXPECT_NE(load_generator_error(dir / "none.pth").find(dir / "none.pth"), std::string::npos);
}

TEST(PickleRewrite, RefusesWhatItDoesNotKnow) {
  const auto error_of = [](const std::string& pickle) {
    try {
      interop::pickle_without_ordered_dicts(pickle, "f.pth");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(std::string("\x80\x02\xff.", 4)).find("f.pth: pickle opcode 0xff at byte 2"), std::string::npos)
      << error_of(std::string("\x80\x02\xff.", 4));
  EXPECT_NE(error_of(std::string("\x80\x02X\x10\x00\x00\x00", 7) + "ab").find("truncated"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x02}", 3)).find("no STOP"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x80\x02u.", 4)).find("closes a MARK it never opened"), std::string::npos);
  EXPECT_NE(error_of("\x80\x02"
                     "ccollections\nOrderedDict\nK\x01\x85R.")
                .find("an OrderedDict with arguments"),
            std::string::npos);
  // Memo indices Python could not have written (LibTorch would size its memo by them).
  EXPECT_NE(error_of(std::string("\x80\x02}r\x00\x00\x00\x0a.", 9)).find("stores memo entry 167772160 after only 0"),
            std::string::npos)
      << error_of(std::string("\x80\x02}r\x00\x00\x00\x0a.", 9));
  EXPECT_NE(error_of(std::string("\x80\x02h\x05.", 5)).find("reads memo entry 5 before storing it"), std::string::npos);
  // A plain dict passes through unchanged.
  const std::string plain = std::string("\x80\x02}q\x00(X\x01\x00\x00\x00", 11) + "aK" + std::string("\x01u.", 3);
  EXPECT_EQ(interop::pickle_without_ordered_dicts(plain, "f.pth"), plain);
}
