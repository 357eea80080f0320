// SPDX-License-Identifier: BSD-3-Clause
// Reading and writing routing traces (HDF5 format version 1, see
// docs/trace-format.md) with the HDF5 C API.
#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include "KokkosMoE_TraceHdf5.hpp"
#include "KokkosMoE_TraceIsolation.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace KokkosMoE {
namespace {

using Impl::H5Handle;

constexpr const char* kFormatName = "kokkos-moe-trace";
constexpr std::int64_t kFormatVersion = 1;

// Refuse to allocate more than this many elements for one dataset (4 GiB of
// int32): a corrupt file must not make us ask for terabytes.
constexpr std::uint64_t kMaxElements = TraceLimits::max_layer_values;
// gzip cannot compress better than about 1032:1, so a dataset whose nominal
// size exceeds its stored bytes by more than this claims data it cannot hold.
constexpr std::uint64_t kMaxCompressionRatio = 1100;
constexpr std::uint64_t kStorageSlackBytes = std::uint64_t(1) << 16;
// Attribute strings longer than this are not something we wrote.
constexpr std::size_t kMaxStringBytes = std::size_t(1) << 20;

// Where an error happened: the file and, when one is concerned, the layer.
struct Where {
  std::string file;
  int layer = -1;

  // The path is shown whole (it is the caller's), but escaped like any
  // quoted text, so that the message stays one line.
  std::string prefix() const {
    const std::string shown = printable_text(file, std::string::npos);
    return layer >= 0 ? shown + ": layer " + std::to_string(layer) + ": " : shown + ": ";
  }
  // `problem` quotes file content only through printable_text (quote()).
  [[noreturn]] void fail(const std::string& problem) const { throw TraceError(prefix() + problem); }
  // Appends HDF5's innermost reason, which is often the useful part
  // ("truncated file", "can't open object", ...).
  [[noreturn]] void fail_hdf5(const std::string& problem) const {
    const std::string detail = Impl::hdf5_error_detail();
    fail(detail.empty() ? problem : problem + " (HDF5: " + printable_text(detail) + ")");
  }
  Where at_layer(int l) const { return Where{file, l}; }
};

// Text from the file, quoted in a message: escaped and bounded.
std::string quote(const std::string& text) { return "'" + printable_text(text) + "'"; }

std::string shape_string(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(static_cast<unsigned long long>(dims[i]));
  }
  return s + "]";
}

// ---------------------------------------------------------------- attributes

// Opens a scalar (or one-element) attribute; an invalid handle when it is
// absent and not required.
H5Handle open_attribute(hid_t obj, const char* name, const Where& w, bool required) {
  const htri_t exists = H5Aexists(obj, name);
  if (exists < 0) w.fail_hdf5(std::string("cannot look up attribute '") + name + "'");
  if (exists == 0) {
    if (required) w.fail(std::string("missing attribute '") + name + "'");
    return {};
  }
  H5Handle attr(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!attr) w.fail_hdf5(std::string("cannot open attribute '") + name + "'");
  H5Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!space || H5Sget_simple_extent_npoints(space.get()) != 1)
    w.fail(std::string("attribute '") + name + "' must hold a single value");
  return attr;
}

H5Handle attribute_type(const H5Handle& attr, const char* name, const Where& w) {
  H5Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (!type) w.fail_hdf5(std::string("cannot read the type of attribute '") + name + "'");
  return type;
}

// Any integer width or signedness: HDF5 converts to int64 on read.
std::optional<std::int64_t> read_int_attribute(hid_t obj, const char* name, const Where& w,
                                               bool required) {
  H5Handle attr = open_attribute(obj, name, w, required);
  if (!attr) return std::nullopt;
  H5Handle type = attribute_type(attr, name, w);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    w.fail(std::string("attribute '") + name + "' must be an integer");
  std::int64_t value = 0;
  if (H5Aread(attr.get(), H5T_NATIVE_INT64, &value) < 0)
    w.fail_hdf5(std::string("cannot read attribute '") + name + "'");
  return value;
}

// Variable- or fixed-length strings, any padding.
std::optional<std::string> read_string_attribute(hid_t obj, const char* name, const Where& w,
                                                 bool required) {
  H5Handle attr = open_attribute(obj, name, w, required);
  if (!attr) return std::nullopt;
  H5Handle type = attribute_type(attr, name, w);
  if (H5Tget_class(type.get()) != H5T_STRING)
    w.fail(std::string("attribute '") + name + "' must be a string");
  const auto read_error = [&] { w.fail_hdf5(std::string("cannot read attribute '") + name + "'"); };

  H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!mem || H5Tset_cset(mem.get(), H5Tget_cset(type.get())) < 0) read_error();
  const htri_t variable = H5Tis_variable_str(type.get());
  if (variable < 0) read_error();
  if (variable > 0) {
    if (H5Tset_size(mem.get(), H5T_VARIABLE) < 0) read_error();
    char* text = nullptr;
    if (H5Aread(attr.get(), mem.get(), &text) < 0) read_error();
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0 || size > kMaxStringBytes)
    w.fail(std::string("attribute '") + name + "' has an implausible string size");
  // One more byte than the file's size and null-terminated padding: HDF5
  // converts space- or null-padded strings into a C string for us.
  std::vector<char> buffer(size + 1, '\0');
  if (H5Tset_size(mem.get(), size + 1) < 0 || H5Tset_strpad(mem.get(), H5T_STR_NULLTERM) < 0 ||
      H5Aread(attr.get(), mem.get(), buffer.data()) < 0)
    read_error();
  return std::string(buffer.data());
}

// ------------------------------------------------------------------ datasets

struct Dataset {
  H5Handle id;
  std::vector<hsize_t> dims;
};

// Opens `name` under `loc`, checks its type class and returns it with its
// dimensions; an invalid handle when absent and not required.
Dataset open_dataset(hid_t loc, const char* name, H5T_class_t expected, const char* expected_desc,
                     const Where& w, bool required) {
  const htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) w.fail_hdf5(std::string("cannot look up dataset '") + name + "'");
  if (exists == 0) {
    if (required) w.fail(std::string("missing dataset '") + name + "'");
    return {};
  }
  Dataset d;
  d.id = H5Handle(H5Dopen2(loc, name, H5P_DEFAULT), H5Dclose);
  if (!d.id) w.fail_hdf5(std::string("cannot open '") + name + "' as a dataset");
  H5Handle type(H5Dget_type(d.id.get()), H5Tclose);
  if (!type) w.fail_hdf5(std::string("cannot read the type of dataset '") + name + "'");
  if (H5Tget_class(type.get()) != expected)
    w.fail(std::string("dataset '") + name + "' must be " + expected_desc);
  H5Handle space(H5Dget_space(d.id.get()), H5Sclose);
  const int rank = space ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) w.fail_hdf5(std::string("cannot read the shape of dataset '") + name + "'");
  d.dims.resize(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space.get(), d.dims.data(), nullptr) < 0)
    w.fail_hdf5(std::string("cannot read the shape of dataset '") + name + "'");
  return d;
}

// Reads the first `rows` rows of a 1-D or 2-D dataset, converting to
// `mem_type`. Checks the claimed size against the bytes actually stored
// before allocating anything.
template <class T>
std::vector<T> read_rows(const Dataset& d, const char* name, hid_t mem_type, hsize_t rows,
                         const Where& w) {
  const hsize_t cols = d.dims.size() == 2 ? d.dims[1] : 1;
  const auto read_error = [&] { w.fail_hdf5(std::string("cannot read dataset '") + name + "'"); };
  if (cols != 0 && rows > kMaxElements / cols)
    w.fail(std::string("dataset '") + name + "' shape " + shape_string(d.dims) +
           " is too large to read");
  const std::uint64_t count = rows * cols;
  if (count == 0) return {};

  H5Handle file_type(H5Dget_type(d.id.get()), H5Tclose);
  if (!file_type) read_error();
  const std::uint64_t nominal_bytes = count * H5Tget_size(file_type.get());
  const std::uint64_t stored_bytes = H5Dget_storage_size(d.id.get());
  if (nominal_bytes > stored_bytes * kMaxCompressionRatio + kStorageSlackBytes)
    w.fail(std::string("dataset '") + name + "' claims shape " + shape_string(d.dims) +
           " but stores only " + std::to_string(stored_bytes) + " bytes (corrupt file?)");

  H5Handle file_space(H5Dget_space(d.id.get()), H5Sclose);
  if (!file_space) read_error();
  const hsize_t start[2] = {0, 0};
  const hsize_t extent[2] = {rows, cols};
  const int rank = static_cast<int>(d.dims.size());
  if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0)
    read_error();
  H5Handle mem_space(H5Screate_simple(rank, extent, nullptr), H5Sclose);
  if (!mem_space) read_error();

  std::vector<T> values(static_cast<std::size_t>(count));
  if (H5Dread(d.id.get(), mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, values.data()) <
      0)
    read_error();
  return values;
}

// -------------------------------------------------------------------- layers

// Layer group names are canonical decimal numbers ("7", not "07" or "+7").
std::optional<int> parse_layer_name(const std::string& name) {
  if (name.empty() || name.size() > 9) return std::nullopt;
  for (char c : name)
    if (c < '0' || c > '9') return std::nullopt;
  const int value = std::stoi(name);
  if (std::to_string(value) != name) return std::nullopt;
  return value;
}

// The names of the links in `group`, in one pass over the group (H5Literate).
// Not one lookup per index (H5Lget_name_by_idx): on a group in the new
// format (dense storage: a B-tree of name hashes), each such lookup builds
// and sorts the table of all links, so listing n layers that way takes
// O(n^2 log n) time.
std::vector<std::string> list_links(hid_t group, const Where& w) {
  struct Listing {
    std::vector<std::string> names;
    bool too_many = false;
  } listing;
  // No exception may cross HDF5's C frames: the callback only collects, and
  // stops the iteration (a positive return) beyond what a trace may hold.
  const auto collect = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    auto* l = static_cast<Listing*>(data);
    if (static_cast<std::int64_t>(l->names.size()) >= TraceLimits::max_layers) {
      l->too_many = true;
      return 1;
    }
    try {
      l->names.emplace_back(name);
    } catch (...) {
      return -1;
    }
    return 0;
  };
  hsize_t position = 0;
  if (H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &position, collect, &listing) < 0)
    w.fail_hdf5("cannot list group '/layers'");
  if (listing.too_many)
    w.fail("'/layers' holds more than " + std::to_string(TraceLimits::max_layers) + " groups");
  return std::move(listing.names);
}

// One layer group, open.
struct OpenLayer {
  int index = 0;
  H5Handle group;
  Dataset ids;
  Dataset weights;
};

// What the reader keeps of every layer: its handles are closed once its
// metadata is checked (HDF5 opens and closes objects far more slowly with
// tens of thousands of them open), and the layers to read are opened again.
struct LayerMeta {
  int index = 0;
  std::string name;
  hsize_t tokens = 0;
};

// Opens one layer group and checks its metadata (not its data) against the
// root attributes.
OpenLayer open_layer(hid_t layers, const std::string& name, std::int64_t top_k, const Where& file) {
  const std::optional<int> index = parse_layer_name(name);
  if (!index) file.fail(quote("/layers/" + name) + " is not a decimal layer index");
  const Where w = file.at_layer(*index);

  OpenLayer m;
  m.index = *index;
  m.group = H5Handle(H5Gopen2(layers, name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!m.group) w.fail_hdf5("'/layers/" + name + "' is not a group");
  const std::int64_t layer_attr = *read_int_attribute(m.group.get(), "layer", w, true);
  if (layer_attr != *index)
    w.fail("attribute 'layer' is " + std::to_string(layer_attr) + ", the group name says " + name);

  m.ids = open_dataset(m.group.get(), "expert_ids", H5T_INTEGER, "integer (int32)", w, true);
  m.weights = open_dataset(m.group.get(), "weights", H5T_FLOAT, "floating point (float32)", w,
                           true);
  if (m.ids.dims.size() != 2)
    w.fail("dataset 'expert_ids' must be 2-D [tokens, top_k], has shape " +
           shape_string(m.ids.dims));
  if (m.ids.dims[1] != static_cast<hsize_t>(top_k))
    w.fail("dataset 'expert_ids' has shape " + shape_string(m.ids.dims) + ", expected " +
           std::to_string(top_k) + " columns (top_k)");
  if (m.weights.dims != m.ids.dims)
    w.fail("dataset 'weights' has shape " + shape_string(m.weights.dims) + ", expert_ids has " +
           shape_string(m.ids.dims));
  return m;
}

struct RootAttributes {
  std::int64_t num_experts = 0, top_k = 0, num_layers = 0;
};

RootAttributes read_root_attributes(hid_t root, Trace& trace, const Where& w) {
  const std::string format = *read_string_attribute(root, "format", w, true);
  if (format != kFormatName)
    w.fail("attribute 'format' is " + quote(format) + ", expected '" + kFormatName + "'");
  const std::int64_t version = *read_int_attribute(root, "version", w, true);
  if (version != kFormatVersion)
    w.fail("unsupported format version " + std::to_string(version) + " (this reader knows " +
           std::to_string(kFormatVersion) + ")");

  RootAttributes a;
  a.num_experts = *read_int_attribute(root, "num_experts", w, true);
  a.top_k = *read_int_attribute(root, "top_k", w, true);
  a.num_layers = *read_int_attribute(root, "num_layers", w, true);
  // Fit the ints before validate_trace sees them; it checks the rest.
  constexpr std::int64_t int_max = std::numeric_limits<int>::max();
  if (a.num_experts < 1 || a.num_experts > int_max)
    w.fail("attribute 'num_experts' is " + std::to_string(a.num_experts) +
           ", must be >= 1 and fit in an int");
  if (a.top_k < 1 || a.top_k > a.num_experts)
    w.fail("attribute 'top_k' is " + std::to_string(a.top_k) +
           ", must be in [1, num_experts = " + std::to_string(a.num_experts) + "]");
  trace.num_experts = static_cast<int>(a.num_experts);
  trace.top_k = static_cast<int>(a.top_k);

  // Descriptive attributes are optional: a trace without them is still usable.
  trace.model = read_string_attribute(root, "model", w, false).value_or("");
  trace.source = read_string_attribute(root, "source", w, false).value_or("");
  trace.note = read_string_attribute(root, "note", w, false).value_or("");
  trace.hidden_size = read_int_attribute(root, "hidden_size", w, false).value_or(0);
  trace.ffn_size = read_int_attribute(root, "ffn_size", w, false).value_or(0);
  return a;
}

H5Handle open_file(const Where& w) {
  std::error_code ec;
  if (!std::filesystem::exists(w.file, ec)) w.fail("no such file");
  if (std::filesystem::is_directory(w.file, ec)) w.fail("is a directory, not a trace file");
  const htri_t is_hdf5 = H5Fis_hdf5(w.file.c_str());
  if (is_hdf5 < 0) w.fail_hdf5("cannot read file");
  if (is_hdf5 == 0) w.fail("not an HDF5 file");
  H5Handle file(H5Fopen(w.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file) w.fail_hdf5("cannot open HDF5 file (truncated or corrupt?)");
  return file;
}

Trace read_trace_impl(const std::string& path, const TraceReadOptions& options) {
  Impl::silence_hdf5_errors();
  const Where w{path};
  H5Handle file = open_file(w);
  H5Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
  if (!root) w.fail_hdf5("cannot open the root group");

  Trace trace;
  const RootAttributes attrs = read_root_attributes(root.get(), trace, w);

  const htri_t has_layers = H5Lexists(root.get(), "layers", H5P_DEFAULT);
  if (has_layers <= 0) w.fail("missing group '/layers'");
  H5Handle layers(H5Gopen2(root.get(), "layers", H5P_DEFAULT), H5Gclose);
  if (!layers) w.fail_hdf5("'/layers' is not a group");
  const std::vector<std::string> names = list_links(layers.get(), w);
  if (static_cast<std::int64_t>(names.size()) != attrs.num_layers)
    w.fail("attribute 'num_layers' is " + std::to_string(attrs.num_layers) +
           " but '/layers' holds " + std::to_string(names.size()) + " groups");
  if (names.empty()) w.fail("'/layers' holds no layer");

  // Metadata of every layer (cheap), so that a file with inconsistent layers
  // is rejected even when only some layers are read.
  std::vector<LayerMeta> metas;
  metas.reserve(names.size());
  for (const std::string& name : names) {
    const OpenLayer m = open_layer(layers.get(), name, attrs.top_k, w);
    metas.push_back(LayerMeta{m.index, name, m.ids.dims[0]});
  }
  std::sort(metas.begin(), metas.end(),
            [](const LayerMeta& a, const LayerMeta& b) { return a.index < b.index; });
  const hsize_t file_tokens = metas.front().tokens;
  for (const LayerMeta& m : metas)
    if (m.tokens != file_tokens)
      w.at_layer(m.index).fail("has " + std::to_string(m.tokens) + " tokens, layer " +
                               std::to_string(metas.front().index) + " has " +
                               std::to_string(file_tokens));

  const hsize_t rows = options.max_tokens > 0
                           ? std::min<hsize_t>(file_tokens,
                                               static_cast<hsize_t>(options.max_tokens))
                           : file_tokens;
  trace.num_tokens = static_cast<std::int64_t>(rows);

  std::vector<int> wanted = options.layers;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  for (int l : wanted) {
    const bool found = std::any_of(metas.begin(), metas.end(),
                                   [l](const LayerMeta& m) { return m.index == l; });
    if (!found)
      w.at_layer(l).fail("no such layer (the file has " + std::to_string(metas.size()) +
                         " layers, " + std::to_string(metas.front().index) + " to " +
                         std::to_string(metas.back().index) + ")");
  }

  for (const LayerMeta& m : metas) {
    if (!wanted.empty() && !std::binary_search(wanted.begin(), wanted.end(), m.index)) continue;
    const Where lw = w.at_layer(m.index);
    const OpenLayer open = open_layer(layers.get(), m.name, attrs.top_k, w);
    TraceLayer layer;
    layer.index = m.index;
    layer.expert_ids = read_rows<std::int32_t>(open.ids, "expert_ids", H5T_NATIVE_INT32, rows, lw);
    layer.weights = read_rows<float>(open.weights, "weights", H5T_NATIVE_FLOAT, rows, lw);
    trace.layers.push_back(std::move(layer));
  }

  Dataset seq = open_dataset(root.get(), "sequence_id", H5T_INTEGER, "integer (int32)", w, false);
  if (seq.id) {
    if (seq.dims.size() != 1 || seq.dims[0] != file_tokens)
      w.fail("dataset 'sequence_id' has shape " + shape_string(seq.dims) + ", expected [" +
             std::to_string(file_tokens) + "]");
    trace.sequence_id = read_rows<std::int32_t>(seq, "sequence_id", H5T_NATIVE_INT32, rows, w);
  }

  validate_trace(trace, path);
  return trace;
}

// KOKKOSMOE_TRACE_NO_FORK=1 reads in this process even when the options ask
// for isolation, e.g. to look at an HDF5 crash under a debugger.
bool isolation_wanted(const TraceReadOptions& options) {
  const char* no_fork = std::getenv("KOKKOSMOE_TRACE_NO_FORK");
  const bool disabled = no_fork != nullptr && *no_fork != '\0' && std::string(no_fork) != "0";
  return options.isolate && !disabled;
}

// HDF5 1.10 loops forever on some corrupt global heaps; a valid trace reads
// far faster than a minute plus a second per 8 MiB of file.
// KOKKOSMOE_TRACE_TIMEOUT=<seconds> sets the limit instead (0: none).
double read_timeout_s(const Where& w) {
  if (const char* env = std::getenv("KOKKOSMOE_TRACE_TIMEOUT"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (*end != '\0' || !(seconds >= 0))
      w.fail("KOKKOSMOE_TRACE_TIMEOUT is " + quote(env) + ", not a number of seconds");
    return seconds;
  }
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(w.file, ec);
  return 60.0 + (ec ? 0.0 : static_cast<double>(bytes) / (8 << 20));
}

// ------------------------------------------------------------------- writing

void write_int_attribute(hid_t obj, const char* name, std::int64_t value, const Where& w) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(space ? H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)
                      : H5I_INVALID_HID,
                H5Aclose);
  if (!attr || H5Awrite(attr.get(), H5T_NATIVE_INT64, &value) < 0)
    w.fail_hdf5(std::string("cannot write attribute '") + name + "'");
}

// Variable-length UTF-8, as the reference traces store them.
void write_string_attribute(hid_t obj, const char* name, const std::string& value, const Where& w) {
  const auto error = [&] { w.fail_hdf5(std::string("cannot write attribute '") + name + "'"); };
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  if (!type || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
      H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
    error();
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  if (!space) error();
  H5Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* text = value.c_str();
  if (!attr || H5Awrite(attr.get(), type.get(), &text) < 0) error();
}

// Row-chunked, shuffled and gzipped (when the library has deflate).
void write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type, const void* data,
                   hsize_t rows, hsize_t cols, int rank, const Where& w) {
  const auto error = [&] { w.fail_hdf5(std::string("cannot write dataset '") + name + "'"); };
  const hsize_t dims[2] = {rows, cols};
  H5Handle space(H5Screate_simple(rank, dims, nullptr), H5Sclose);
  H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!space || !dcpl || H5Pset_obj_track_times(dcpl.get(), false) < 0)
    error();       // reproducible bytes
  if (rows > 0) {  // chunk dims must be positive and within the dims
    const hsize_t chunk_rows = std::min<hsize_t>(rows, std::max<hsize_t>(1, 16384 / cols));
    const hsize_t chunk[2] = {chunk_rows, cols};
    if (H5Pset_chunk(dcpl.get(), rank, chunk) < 0) error();
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 &&
        (H5Pset_shuffle(dcpl.get()) < 0 || H5Pset_deflate(dcpl.get(), 4) < 0))
      error();
  }
  H5Handle ds(H5Dcreate2(loc, name, file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
              H5Dclose);
  if (!ds) error();
  if (rows > 0 && H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) error();
}

// A group creation property list without object timestamps: the same trace
// then gives the same bytes, so generated inputs can be checked in.
H5Handle untimed_group_plist(const Where& w) {
  H5Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  if (!gcpl || H5Pset_obj_track_times(gcpl.get(), false) < 0)
    w.fail_hdf5("cannot create a group property list");
  return gcpl;
}

void write_file(const std::string& target, const Trace& trace, const Where& w) {
  H5Handle file(H5Fcreate(target.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file) w.fail_hdf5("cannot create file");
  const hid_t root = file.get();
  write_string_attribute(root, "format", kFormatName, w);
  write_int_attribute(root, "version", kFormatVersion, w);
  write_string_attribute(root, "model", trace.model, w);
  write_string_attribute(root, "source", trace.source, w);
  write_string_attribute(root, "note", trace.note, w);
  write_int_attribute(root, "num_experts", trace.num_experts, w);
  write_int_attribute(root, "top_k", trace.top_k, w);
  write_int_attribute(root, "hidden_size", trace.hidden_size, w);
  write_int_attribute(root, "ffn_size", trace.ffn_size, w);
  write_int_attribute(root, "num_layers", static_cast<std::int64_t>(trace.layers.size()), w);

  const H5Handle gcpl = untimed_group_plist(w);
  H5Handle layers(H5Gcreate2(root, "layers", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!layers) w.fail_hdf5("cannot create group '/layers'");
  const auto rows = static_cast<hsize_t>(trace.num_tokens);
  const auto k = static_cast<hsize_t>(trace.top_k);
  for (const TraceLayer& layer : trace.layers) {
    const Where lw = w.at_layer(layer.index);
    const std::string name = std::to_string(layer.index);
    H5Handle group(H5Gcreate2(layers.get(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                   H5Gclose);
    if (!group) lw.fail_hdf5("cannot create group '/layers/" + name + "'");
    write_int_attribute(group.get(), "layer", layer.index, lw);
    write_dataset(group.get(), "expert_ids", H5T_STD_I32LE, H5T_NATIVE_INT32,
                  layer.expert_ids.data(), rows, k, 2, lw);
    write_dataset(group.get(), "weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, layer.weights.data(),
                  rows, k, 2, lw);
  }
  if (!trace.sequence_id.empty())
    write_dataset(root, "sequence_id", H5T_STD_I32LE, H5T_NATIVE_INT32, trace.sequence_id.data(),
                  rows, 1, 1, w);
  if (H5Fflush(root, H5F_SCOPE_GLOBAL) < 0) w.fail_hdf5("cannot flush file");
}

}  // namespace

Trace read_trace(const std::string& path, const TraceReadOptions& options) {
  try {
    const auto read = [&] { return read_trace_impl(path, options); };
    return isolation_wanted(options) ? Impl::read_isolated(path, read, read_timeout_s(Where{path}))
                                     : read();
  } catch (const TraceError&) {
    throw;
  } catch (const std::exception& e) {  // e.g. bad_alloc: still one TraceError line
    throw TraceError(printable_text(path, std::string::npos) + ": " + printable_text(e.what()));
  }
}

void write_trace(const std::string& path, const Trace& trace) {
  validate_trace(trace, path);
  Impl::silence_hdf5_errors();
  const Where w{path};
  // Write beside the target and rename, so a failure never leaves a
  // half-written trace under the requested name.
  const std::string partial = path + ".partial";
  std::error_code ec;
  try {
    write_file(partial, trace, w);
  } catch (...) {
    std::filesystem::remove(partial, ec);
    throw;
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    w.fail("cannot rename the written file into place: " + ec.message());
  }
}

}  // namespace KokkosMoE
