// SPDX-License-Identifier: BSD-3-Clause
// read_trace / write_trace: round trips, and one test per malformed file,
// each checking that the TraceError names the file and the layer, with both
// readers (in-process and isolated: HDF5 reports these files as errors, so
// neither crashes, and both give the same message).
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include "Test_TraceHelpers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>

namespace {

using namespace KokkosMoE;
using namespace KokkosMoE::Test;

// A small hand-made trace: E = 6, k = 3, 5 tokens, layers 1, 4 and 9.
Trace sample_trace(bool with_sequence_id) {
  Trace t;
  t.model = "round-trip";
  t.source = "unit test";
  t.note = "notes with UTF-8: \xc3\xa9";
  t.num_experts = 6;
  t.top_k = 3;
  t.hidden_size = 96;
  t.ffn_size = 320;
  t.num_tokens = 5;
  for (int index : {1, 4, 9}) {
    TraceLayer l;
    l.index = index;
    for (int tok = 0; tok < 5; ++tok)
      for (int j = 0; j < 3; ++j) {
        l.expert_ids.push_back((tok * 2 + j + index) % 6);
        l.weights.push_back(0.1f * static_cast<float>(j + 1) + 0.01f * static_cast<float>(index));
      }
    t.layers.push_back(l);
  }
  if (with_sequence_id) t.sequence_id = {0, 0, 1, 1, 2};
  return t;
}


// ------------------------------------------------------------ round trips

TEST(TraceFile, RoundTripAllFieldsWithSequenceId) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  const Trace in = sample_trace(true);
  write_trace(path, in);
  const Trace out = read_trace(path);
  expect_same_trace(in, out);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(TraceFile, RoundTripWithoutSequenceId) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  write_trace(path, sample_trace(false));
  const Trace out = read_trace(path);
  EXPECT_TRUE(out.sequence_id.empty());
  EXPECT_EQ(out.layers.size(), 3u);
}

TEST(TraceFile, RoundTripZeroTokens) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  Trace in = sample_trace(false);
  in.num_tokens = 0;
  for (TraceLayer& l : in.layers) l.expert_ids.clear(), l.weights.clear();
  write_trace(path, in);
  const Trace out = read_trace(path);
  EXPECT_EQ(out.num_tokens, 0);
  EXPECT_EQ(out.layers.size(), 3u);
}

TEST(TraceFile, ReadSubsetOfLayers) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  const Trace in = sample_trace(true);
  write_trace(path, in);
  TraceReadOptions opt;
  opt.layers = {9, 1, 9};  // unsorted, repeated: read once each, sorted
  const Trace out = read_trace(path, opt);
  ASSERT_EQ(out.layers.size(), 2u);
  EXPECT_EQ(out.layers[0].index, 1);
  EXPECT_EQ(out.layers[1].index, 9);
  EXPECT_EQ(out.layers[1].expert_ids, in.layers[2].expert_ids);
  EXPECT_EQ(out.sequence_id, in.sequence_id);
}

TEST(TraceFile, ReadFirstMaxTokens) {
  ScratchDir dir;
  const std::string path = dir.path("t.h5");
  const Trace in = sample_trace(true);
  write_trace(path, in);
  TraceReadOptions opt;
  opt.max_tokens = 2;
  const Trace out = read_trace(path, opt);
  EXPECT_EQ(out.num_tokens, 2);
  ASSERT_EQ(out.layers.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& ids = in.layers[i].expert_ids;
    const auto& w = in.layers[i].weights;
    EXPECT_EQ(out.layers[i].expert_ids, std::vector<std::int32_t>(ids.begin(), ids.begin() + 6));
    EXPECT_EQ(out.layers[i].weights, std::vector<float>(w.begin(), w.begin() + 6));
  }
  EXPECT_EQ(out.sequence_id, (std::vector<std::int32_t>{0, 0}));

  opt.max_tokens = 1000;  // more than the file holds: everything
  EXPECT_EQ(read_trace(path, opt).num_tokens, 5);
}

TEST(TraceFile, AcceptsFixedLengthStringsAndNarrowIntegers) {
  ScratchDir dir;
  const std::string path = dir.path("raw.h5");
  // A named array: nvcc cannot parse these macros in a braced range-for.
  const hid_t types[] = {H5T_STD_I32LE, H5T_STD_U8LE, H5T_STD_I16BE, H5T_STD_U64LE};
  for (hid_t type : types) {
    RawTrace r = valid_raw_trace();
    r.fixed_length_strings = true;
    r.int_attr_type = type;
    write_raw_trace(path, r);
    const Trace t = read_trace(path);
    EXPECT_EQ(t.model, "test-model");
    EXPECT_EQ(t.num_experts, 8);
    EXPECT_EQ(t.top_k, 2);
    EXPECT_EQ(t.hidden_size, 64);
    ASSERT_EQ(t.layers.size(), 2u);
    EXPECT_EQ(t.layers[0].index, 3);
    EXPECT_EQ(t.layers[1].index, 7);
  }
}

TEST(TraceFile, WriteRefusesInvalidTrace) {
  ScratchDir dir;
  const std::string path = dir.path("bad.h5");
  Trace t = sample_trace(false);
  t.layers[1].expert_ids[4] = 6;
  expect_trace_error([&] { write_trace(path, t); }, {path, "layer 4", "out of range"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceFile, WriteToUnwritableDirectory) {
  const std::string path = "/nonexistent-dir-kokkosmoe/t.h5";
  expect_trace_error([&] { write_trace(path, sample_trace(false)); }, {path, "cannot create"});
}

// -------------------------------------------------------------- malformed

// Expects read_trace(path, opt) to fail with all the fragments, through the
// in-process reader and through the isolated one, with the same message.
void expect_read_error(const std::string& path, const std::vector<std::string>& fragments,
                       TraceReadOptions opt = {}) {
  std::string messages[2];
  for (int isolate = 0; isolate < 2; ++isolate) {
    SCOPED_TRACE(isolate ? "isolated reader" : "in-process reader");
    opt.isolate = isolate != 0;
    expect_trace_error(
        [&] {
          try {
            read_trace(path, opt);
          } catch (const TraceError& e) {
            messages[isolate] = e.what();
            throw;
          }
        },
        fragments);
  }
  EXPECT_EQ(messages[0], messages[1]);
}

// Writes `r` and expects read_trace to fail with all the fragments (the path
// is always one of them).
void expect_raw_error(const RawTrace& r, std::vector<std::string> fragments,
                      const TraceReadOptions& opt = {}) {
  ScratchDir dir;
  const std::string path = dir.path("bad.h5");
  write_raw_trace(path, r);
  fragments.insert(fragments.begin(), path + ": ");
  expect_read_error(path, fragments, opt);
}

TEST(TraceFileMalformed, ValidRawFileReads) {
  ScratchDir dir;
  const std::string path = dir.path("ok.h5");
  write_raw_trace(path, valid_raw_trace());
  EXPECT_NO_THROW(read_trace(path));
}

TEST(TraceFileMalformed, MissingFormat) {
  RawTrace r = valid_raw_trace();
  r.format.reset();
  expect_raw_error(r, {"missing attribute 'format'"});
}

TEST(TraceFileMalformed, WrongFormatString) {
  RawTrace r = valid_raw_trace();
  r.format = "something-else";
  expect_raw_error(r, {"'something-else'", "expected 'kokkos-moe-trace'"});
}

TEST(TraceFileMalformed, WrongVersion) {
  RawTrace r = valid_raw_trace();
  r.version = 2;
  expect_raw_error(r, {"unsupported format version 2"});
}

TEST(TraceFileMalformed, VersionIsAString) {
  RawTrace r = valid_raw_trace();
  r.version_as_string = true;
  expect_raw_error(r, {"attribute 'version' must be an integer"});
}

TEST(TraceFileMalformed, MissingNumExperts) {
  RawTrace r = valid_raw_trace();
  r.num_experts.reset();
  expect_raw_error(r, {"missing attribute 'num_experts'"});
}

TEST(TraceFileMalformed, TopKLargerThanExperts) {
  RawTrace r = valid_raw_trace();
  r.top_k = 9;
  expect_raw_error(r, {"attribute 'top_k' is 9"});
}

TEST(TraceFileMalformed, FloatExpertIds) {
  RawTrace r = valid_raw_trace();
  r.layers[1].ids_type = H5T_IEEE_F32LE;
  expect_raw_error(r, {"layer 7: ", "dataset 'expert_ids' must be integer"});
}

TEST(TraceFileMalformed, WrongNumberOfColumns) {
  RawTrace r = valid_raw_trace();
  r.layers[0] = raw_layer(3, 4, 3);
  expect_raw_error(r, {"layer 3: ", "[4, 3]", "expected 2 columns"});
}

TEST(TraceFileMalformed, OneDimensionalExpertIds) {
  RawTrace r = valid_raw_trace();
  r.layers[0].dims = {8};
  expect_raw_error(r, {"layer 3: ", "must be 2-D", "[8]"});
}

TEST(TraceFileMalformed, WeightsShapeDiffers) {
  RawTrace r = valid_raw_trace();
  r.layers[1].weights_dims = std::vector<hsize_t>{8, 1};
  expect_raw_error(r, {"layer 7: ", "dataset 'weights' has shape [8, 1]"});
}

TEST(TraceFileMalformed, NegativeExpertId) {
  RawTrace r = valid_raw_trace();
  r.layers[1].ids[5] = -1;
  expect_raw_error(r, {"layer 7: ", "token 2: ", "expert id -1 out of range [0, 8)"});
}

TEST(TraceFileMalformed, ExpertIdTooLarge) {
  RawTrace r = valid_raw_trace();
  r.layers[0].ids[0] = 8;
  expect_raw_error(r, {"layer 3: ", "token 0: ", "expert id 8 out of range [0, 8)"});
}

TEST(TraceFileMalformed, RepeatedIdInRow) {
  RawTrace r = valid_raw_trace();
  r.layers[1].ids[6] = r.layers[1].ids[7];
  expect_raw_error(r, {"layer 7: ", "token 3: ", "chosen twice"});
}

TEST(TraceFileMalformed, NaNWeight) {
  RawTrace r = valid_raw_trace();
  r.layers[0].weights[3] = std::numeric_limits<float>::quiet_NaN();
  expect_raw_error(r, {"layer 3: ", "token 1: ", "not finite"});
}

TEST(TraceFileMalformed, InfWeight) {
  RawTrace r = valid_raw_trace();
  r.layers[1].weights[0] = -std::numeric_limits<float>::infinity();
  expect_raw_error(r, {"layer 7: ", "token 0: ", "not finite"});
}

TEST(TraceFileMalformed, UnequalTokenCounts) {
  RawTrace r = valid_raw_trace();
  r.layers[1] = raw_layer(7, 3);
  expect_raw_error(r, {"layer 7: ", "has 3 tokens, layer 3 has 4"});
}

TEST(TraceFileMalformed, NumLayersMismatch) {
  RawTrace r = valid_raw_trace();
  r.num_layers = 3;
  expect_raw_error(r, {"attribute 'num_layers' is 3", "holds 2 groups"});
}

TEST(TraceFileMalformed, LayerAttributeDisagreesWithName) {
  RawTrace r = valid_raw_trace();
  r.layers[1].layer = 8;
  expect_raw_error(r, {"layer 7: ", "attribute 'layer' is 8"});
}

TEST(TraceFileMalformed, NonDecimalLayerName) {
  RawTrace r = valid_raw_trace();
  r.layers[1].name = "07";
  expect_raw_error(r, {"'/layers/07' is not a decimal layer index"});
}

TEST(TraceFileMalformed, SequenceIdWrongLength) {
  RawTrace r = valid_raw_trace();
  r.sequence_id = std::vector<std::int32_t>{0, 0, 1};
  expect_raw_error(r, {"dataset 'sequence_id' has shape [3], expected [4]"});
}

TEST(TraceFileMalformed, AbsurdWidths) {
  // A corrupt width would otherwise surface as a failed allocation of the
  // replay's E F H weights, naming no attribute.
  RawTrace r = valid_raw_trace();
  r.hidden_size = std::int64_t(1) << 61;
  expect_raw_error(r, {"hidden_size 2305843009213693952", "exceeds 1048576"});
  r = valid_raw_trace();
  r.ffn_size = (std::int64_t(1) << 20) + 1;
  expect_raw_error(r, {"ffn_size 1048577", "exceeds"});
}

TEST(TraceFileMalformed, NumExpertsBeyondAnInt) {
  RawTrace r = valid_raw_trace();
  r.num_experts = std::int64_t(3000000000);
  expect_raw_error(r, {"attribute 'num_experts' is 3000000000", "fit in an int"});
}

TEST(TraceFileMalformed, AbsurdDimsDoNotAllocate) {
  // 2^28 x 2 int32 claimed (2 GiB) with no chunk ever written: refused from
  // the storage size before any allocation.
  RawTrace r = valid_raw_trace();
  r.num_layers = 1;
  r.layers.resize(1);
  r.layers[0].dims = {hsize_t(1) << 28, 2};
  r.layers[0].write_data = false;
  expect_raw_error(r, {"layer 3: ", "stores only"});
}

TEST(TraceFileMalformed, RequestedLayerMissing) {
  TraceReadOptions opt;
  opt.layers = {3, 5};
  expect_raw_error(valid_raw_trace(), {"layer 5: ", "no such layer"}, opt);
}

TEST(TraceFileMalformed, NotHdf5) {
  ScratchDir dir;
  const std::string path = dir.path("random.h5");
  {
    std::ofstream out(path, std::ios::binary);
    std::mt19937 rng(7);
    for (int i = 0; i < 4096; ++i) out.put(static_cast<char>(rng() & 0xff));
  }
  expect_read_error(path, {path + ": ", "not an HDF5 file"});
}

TEST(TraceFileMalformed, TruncatedFile) {
  ScratchDir dir;
  const std::string path = dir.path("truncated.h5");
  write_trace(path, sample_trace(true));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  expect_read_error(path, {path + ": "});
}

TEST(TraceFileMalformed, NonexistentFile) {
  ScratchDir dir;
  const std::string path = dir.path("missing.h5");
  expect_read_error(path, {path + ": ", "no such file"});
}

// ------------------------------------------------ file content in messages

// Every message is one line of bounded length, whatever the file holds.
void expect_one_short_line(const std::string& message) {
  EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
  for (char c : message)
    ASSERT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        << "control character " << int(c) << " in '" << message.substr(0, 400) << "'";
}

std::string read_error_message(const std::string& path) {
  try {
    read_trace(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TraceError";
  return "";
}

TEST(TraceFileMalformed, HugeFormatAttributeIsCut) {
  // A 1 MiB attribute gave a 1 MiB "one-line" message.
  RawTrace r = valid_raw_trace();
  r.format = std::string(std::size_t(1) << 20, 'x');
  expect_raw_error(r, {"attribute 'format' is 'xxxx", "\xe2\x80\xa6(1048576 bytes)'",
                       "expected 'kokkos-moe-trace'"});
  ScratchDir dir;
  const std::string path = dir.path("huge.h5");
  write_raw_trace(path, r);
  expect_one_short_line(read_error_message(path));
}

TEST(TraceFileMalformed, ControlCharactersAreEscaped) {
  // Newlines and terminal escapes from the file must not reach the terminal.
  RawTrace r = valid_raw_trace();
  r.format = "kokkos\n\x1b[2J\x1b]0;title\x07moe\\";
  expect_raw_error(r, {"attribute 'format' is 'kokkos\\n\\x1b[2J\\x1b]0;title\\x07moe\\\\'"});
  ScratchDir dir;
  const std::string path = dir.path("escapes.h5");
  write_raw_trace(path, r);
  expect_one_short_line(read_error_message(path));
}

TEST(TraceFileMalformed, LongLayerNameIsCut) {
  RawTrace r = valid_raw_trace();
  r.layers[1].name = std::string(5000, '9') + "\r";
  expect_raw_error(r, {"'/layers/99999", "\xe2\x80\xa6(5009 bytes)' is not a decimal layer index"});
  ScratchDir dir;
  const std::string path = dir.path("name.h5");
  write_raw_trace(path, r);
  expect_one_short_line(read_error_message(path));
}

// --------------------------------------------------------- many layers

// n layers of no tokens (E = 1, k = 1) in groups of the new format (HDF5
// 1.8's dense link storage), which the reference tools and h5py write with
// libver='latest'.
void write_many_layers(const std::string& path, int n) {
  using namespace Detail;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0, "libver");
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  check(file >= 0, "H5Fcreate");
  write_string_attr(file, "format", "kokkos-moe-trace", false);
  write_int_attr(file, "version", 1, H5T_STD_I64LE);
  write_int_attr(file, "num_experts", 1, H5T_STD_I64LE);
  write_int_attr(file, "top_k", 1, H5T_STD_I64LE);
  write_int_attr(file, "num_layers", n, H5T_STD_I64LE);
  const hid_t layers = H5Gcreate2(file, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(layers >= 0, "layers");
  const hsize_t dims[2] = {0, 1};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  for (int l = 0; l < n; ++l) {
    const hid_t g = H5Gcreate2(layers, std::to_string(l).c_str(), H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    check(g >= 0, "layer group");
    write_int_attr(g, "layer", l, H5T_STD_I64LE);
    const hid_t ids = H5Dcreate2(g, "expert_ids", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                 H5P_DEFAULT);
    const hid_t weights = H5Dcreate2(g, "weights", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                                     H5P_DEFAULT);
    check(ids >= 0 && weights >= 0, "datasets");
    H5Dclose(ids);
    H5Dclose(weights);
    H5Gclose(g);
  }
  H5Sclose(space);
  H5Gclose(layers);
  H5Fclose(file);
  H5Pclose(fapl);
}

TEST(TraceFile, ManyLayersReadInLinearTime) {
  // Listing the layers looked up each name by its index: quadratic in their
  // number with new-format groups (10,000 layers: 51 s; 20,000 went past the
  // isolated reader's one-minute limit), though the format allows 65,536.
  ScratchDir dir;
  const std::string path = dir.path("many.h5");
  constexpr int n = 20000;
  write_many_layers(path, n);
  TraceReadOptions opt;
  opt.layers = {n - 1};  // every layer's metadata is still read and checked
  const auto start = std::chrono::steady_clock::now();
  const Trace t = read_trace(path, opt);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(t.layers.size(), 1u);
  EXPECT_EQ(t.layers[0].index, n - 1);
  EXPECT_EQ(t.num_tokens, 0);
  // About 2 s on one core, where a listing quadratic in the layers takes
  // minutes; the margin is for loaded test machines.
  EXPECT_LT(seconds, 10.0) << "reading " << n << " layers";
  std::cout << "[          ] " << n << " layers read in " << seconds << " s\n";
}

// -------------------------------------------------------------- validate

TEST(TraceValidate, AcceptsSample) { EXPECT_NO_THROW(validate_trace(sample_trace(true), "mem")); }

TEST(TraceValidate, RejectsInconsistentTraces) {
  Trace t = sample_trace(true);
  t.layers[2].weights.pop_back();
  expect_trace_error([&] { validate_trace(t, "mem"); }, {"mem: layer 9: ", "expected 15"});

  t = sample_trace(true);
  t.sequence_id.pop_back();
  expect_trace_error([&] { validate_trace(t, "mem"); }, {"mem: ", "sequence_id"});

  t = sample_trace(false);
  std::swap(t.layers[0], t.layers[1]);
  expect_trace_error([&] { validate_trace(t, "mem"); }, {"mem: layer 1: ", "sorted"});

  t = sample_trace(false);
  t.top_k = 7;
  expect_trace_error([&] { validate_trace(t, "mem"); }, {"mem: ", "top_k is 7"});

  t = sample_trace(false);
  t.layers.clear();
  expect_trace_error([&] { validate_trace(t, "mem"); }, {"mem: ", "no layer"});
}

}  // namespace
