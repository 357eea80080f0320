// SPDX-License-Identifier: BSD-3-Clause
// Helpers for the trace tests: a scratch directory, a writer that builds trace
// files with the HDF5 C API directly (so that every field can be made wrong,
// which write_trace would refuse), and a check on TraceError messages.
#ifndef KOKKOSMOE_TEST_TRACEHELPERS_HPP
#define KOKKOSMOE_TEST_TRACEHELPERS_HPP

#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace KokkosMoE {
namespace Test {

// A fresh directory per test, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string name = std::string("kokkosmoe-trace-") + (info ? info->name() : "test") +
                             "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }

 private:
  std::filesystem::path dir_;
};

// Description of a raw trace file; the defaults make a valid one
// (E = 8, k = 2, 4 tokens, layers 3 and 7), each test breaks one thing.
struct RawLayer {
  std::string name;                   // group name under /layers
  std::optional<std::int64_t> layer;  // the group's `layer` attribute
  std::vector<hsize_t> dims;          // of both datasets
  hid_t ids_type = H5T_STD_I32LE;     // file type of expert_ids
  std::vector<std::int32_t> ids;
  std::vector<float> weights;
  std::optional<std::vector<hsize_t>> weights_dims;  // when it differs from dims
  bool write_data = true;                            // false: datasets created, never written
};

struct RawTrace {
  std::optional<std::string> format = std::string("kokkos-moe-trace");
  std::optional<std::int64_t> version = 1;
  std::optional<std::int64_t> num_experts = 8;
  std::optional<std::int64_t> top_k = 2;
  std::optional<std::int64_t> num_layers = 2;
  std::int64_t hidden_size = 64, ffn_size = 128;
  std::string model = "test-model";
  hid_t int_attr_type = H5T_STD_I64LE;  // file type of integer attributes
  bool fixed_length_strings = false;
  bool version_as_string = false;
  std::vector<RawLayer> layers;
  std::optional<std::vector<std::int32_t>> sequence_id;
};

// The root attributes of two traces agree.
inline void expect_same_header(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.note, b.note);
  EXPECT_EQ(a.num_experts, b.num_experts);
  EXPECT_EQ(a.top_k, b.top_k);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.ffn_size, b.ffn_size);
}

// Two traces agree in every field.
inline void expect_same_trace(const Trace& a, const Trace& b) {
  expect_same_header(a, b);
  EXPECT_EQ(a.num_tokens, b.num_tokens);
  EXPECT_EQ(a.sequence_id, b.sequence_id);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].index, b.layers[i].index);
    EXPECT_EQ(a.layers[i].expert_ids, b.layers[i].expert_ids);
    EXPECT_EQ(a.layers[i].weights, b.layers[i].weights);
  }
}

inline RawLayer raw_layer(int index, std::int64_t tokens = 4, int k = 2) {
  RawLayer l;
  l.name = std::to_string(index);
  l.layer = index;
  l.dims = {static_cast<hsize_t>(tokens), static_cast<hsize_t>(k)};
  for (std::int64_t t = 0; t < tokens; ++t)
    for (int j = 0; j < k; ++j) {
      l.ids.push_back(static_cast<std::int32_t>((t + j + index) % 8));
      l.weights.push_back(1.0f / static_cast<float>(k));
    }
  return l;
}

inline RawTrace valid_raw_trace() {
  RawTrace r;
  r.layers = {raw_layer(3), raw_layer(7)};
  return r;
}

namespace Detail {

inline void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test helper: HDF5 call failed: ") + what);
}

inline void write_string_attr(hid_t obj, const char* name, const std::string& value, bool fixed) {
  hid_t type = H5Tcopy(H5T_C_S1);
  if (fixed) {
    check(H5Tset_size(type, value.size() + 1) >= 0, "H5Tset_size");
  } else {
    check(H5Tset_size(type, H5T_VARIABLE) >= 0, "H5Tset_size");
  }
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  check(attr >= 0, name);
  const char* text = value.c_str();
  check((fixed ? H5Awrite(attr, type, text) : H5Awrite(attr, type, &text)) >= 0, name);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

inline void write_int_attr(hid_t obj, const char* name, std::int64_t value, hid_t file_type) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  check(attr >= 0, name);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value) >= 0, name);
  H5Aclose(attr);
  H5Sclose(space);
}

inline void write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type,
                          const std::vector<hsize_t>& dims, const void* data, bool write_data) {
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  std::vector<hsize_t> chunk(dims);
  for (hsize_t& c : chunk) c = std::max<hsize_t>(1, std::min<hsize_t>(c, 1024));
  check(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) >= 0, "H5Pset_chunk");
  hid_t ds = H5Dcreate2(loc, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  check(ds >= 0, name);
  if (write_data) check(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0, name);
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
}

}  // namespace Detail

inline void write_raw_trace(const std::string& path, const RawTrace& r) {
  using namespace Detail;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  check(file >= 0, "H5Fcreate");
  const auto int_attr = [&](hid_t obj, const char* name, const std::optional<std::int64_t>& v) {
    if (v) write_int_attr(obj, name, *v, r.int_attr_type);
  };
  if (r.format) write_string_attr(file, "format", *r.format, r.fixed_length_strings);
  if (r.version_as_string) write_string_attr(file, "version", "1", r.fixed_length_strings);
  else int_attr(file, "version", r.version);
  write_string_attr(file, "model", r.model, r.fixed_length_strings);
  write_string_attr(file, "source", "unit test", r.fixed_length_strings);
  write_string_attr(file, "note", "", r.fixed_length_strings);
  int_attr(file, "num_experts", r.num_experts);
  int_attr(file, "top_k", r.top_k);
  int_attr(file, "hidden_size", r.hidden_size);
  int_attr(file, "ffn_size", r.ffn_size);
  int_attr(file, "num_layers", r.num_layers);

  hid_t layers = H5Gcreate2(file, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(layers >= 0, "layers");
  for (const RawLayer& l : r.layers) {
    hid_t g = H5Gcreate2(layers, l.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(g >= 0, "layer group");
    int_attr(g, "layer", l.layer);
    write_dataset(g, "expert_ids", l.ids_type, H5T_NATIVE_INT32, l.dims, l.ids.data(),
                  l.write_data);
    write_dataset(g, "weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, l.weights_dims.value_or(l.dims),
                  l.weights.data(), l.write_data);
    H5Gclose(g);
  }
  H5Gclose(layers);
  if (r.sequence_id)
    write_dataset(file, "sequence_id", H5T_STD_I32LE, H5T_NATIVE_INT32,
                  {static_cast<hsize_t>(r.sequence_id->size())}, r.sequence_id->data(), true);
  H5Fclose(file);
}

// Expects `f` to throw TraceError whose message contains every fragment.
inline void expect_trace_error(const std::function<void()>& f,
                               const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no TraceError thrown (expected one mentioning '" << fragments.at(0) << "')";
  } catch (const TraceError& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message '" << message << "' lacks '" << fragment << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected TraceError, got another exception: " << e.what();
  }
}

}  // namespace Test
}  // namespace KokkosMoE

#endif
