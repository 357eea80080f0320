// SPDX-License-Identifier: BSD-3-Clause
// Trace files for the fuzz harness, written with the HDF5 C API so that any
// part can be wrong in a way write_trace would refuse: a valid trace of
// random shape, types, layouts and string kinds; the same with one known
// defect (each makes the file invalid by docs/trace-format.md); or a valid
// file with damaged bytes (truncated: invalid; changed: either).
#include "FuzzTraceFiles.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace KokkosMoE {
namespace Fuzz {
namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("fuzz trace generator: HDF5 call failed: " + what);
}

// ------------------------------------------------------------ description

struct Attr {
  enum Kind {
    integer,
    int_pair,    // two values
    floating,    // the value as a double
    null_space,  // no value at all (H5S_NULL)
    string_vlen,
    string_fixed,        // null-padded
    string_fixed_space,  // space-padded
    string_pair,         // two variable-length strings
  };
  std::string name;
  Kind kind = integer;
  hid_t type = H5T_STD_I64LE;  // file type of the integer kinds
  std::int64_t value = 0;
  std::string text;
  bool one_element_array = false;  // shape [1] instead of a scalar (accepted)
  H5T_cset_t cset = H5T_CSET_UTF8;
};

struct Data {
  enum Kind { numeric, string, compound, enumeration, group } kind = numeric;
  bool present = true;
  hid_t type = H5T_STD_I32LE;  // file type of a numeric dataset
  std::vector<hsize_t> dims;
  std::vector<double> values;  // row-major, one per element when written
  enum Layout { contiguous, chunked, gzip, compact } layout = chunked;
  hsize_t chunk_rows = 4;
  bool write = true;
  bool null_space = false, scalar_space = false;
  bool unlimited = false;  // first dimension extendible (chunked)
};

struct Layer {
  std::string name;  // link name under /layers
  enum Link { group, dataset, dangling, hard_to_first, external } link = group;
  std::vector<Attr> attrs;
  Data ids, weights;
  bool extra = false;  // an unrelated dataset and attribute in the group (ignored)
};

struct Spec {
  std::vector<Attr> root;
  enum LayersKind { group, missing, dataset, dangling } layers_kind = group;
  std::vector<Layer> layers;
  Data sequence;
  bool latest_format = false;  // new-style groups (link messages, dense storage)
  bool extra_root = false;
  int experts = 0, top_k = 0;
  std::int64_t tokens = 0;
};

Attr* find_attr(std::vector<Attr>& attrs, const std::string& name) {
  for (Attr& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

void erase_attr(std::vector<Attr>& attrs, const std::string& name) {
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                             [&](const Attr& a) { return a.name == name; }),
              attrs.end());
}

// An integer file type that holds v.
hid_t int_type_for(Rng& rng, std::int64_t v) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::vector<hid_t> fit;
  // (Calls, not a braced table: HDF5's type names are macros that call
  // H5open(), which some compilers' front ends misparse inside braces.)
  const auto add = [&](hid_t type, std::int64_t lo, std::int64_t hi) {
    if (v >= lo && v <= hi) fit.push_back(type);
  };
  add(H5T_STD_I8LE, -128, 127);
  add(H5T_STD_U8LE, 0, 255);
  add(H5T_STD_I16BE, -32768, 32767);
  add(H5T_STD_U16LE, 0, 65535);
  add(H5T_STD_I32LE, INT32_MIN, INT32_MAX);
  add(H5T_STD_I32BE, INT32_MIN, INT32_MAX);
  add(H5T_STD_U32LE, 0, UINT32_MAX);
  add(H5T_STD_I64LE, INT64_MIN, max);
  add(H5T_STD_I64BE, INT64_MIN, max);
  add(H5T_STD_U64LE, 0, max);
  return rng.pick(fit);
}

Attr int_attr(Rng& rng, const std::string& name, std::int64_t v) {
  Attr a;
  a.name = name;
  a.value = v;
  a.type = int_type_for(rng, v);
  a.one_element_array = rng.chance(0.1);
  return a;
}

Attr string_attr(Rng& rng, const std::string& name, const std::string& text) {
  Attr a;
  a.name = name;
  a.text = text;
  const std::vector<Attr::Kind> kinds = {Attr::string_vlen, Attr::string_vlen, Attr::string_fixed,
                                         Attr::string_fixed_space};
  a.kind = rng.pick(kinds);
  a.cset = rng.chance(0.5) ? H5T_CSET_UTF8 : H5T_CSET_ASCII;
  a.one_element_array = rng.chance(0.1);
  return a;
}

// Text a valid trace may hold in its descriptive attributes.
std::string some_text(Rng& rng) {
  const std::vector<std::string> texts = {"mixtral-8x7b",
                                          "",
                                          "fuzz",
                                          "model\nwith a newline",
                                          "\x1b[31mred\x1b[0m",
                                          "tab\there",
                                          "caf\xc3\xa9",
                                          "bad utf-8 \xff\xfe",
                                          "bidi \xe2\x80\xae override",
                                          std::string(300, 'm'),
                                          "quote ' and \\ backslash"};
  return rng.pick(texts);
}

Data numeric_data(Rng& rng, hid_t type, std::vector<hsize_t> dims, std::vector<double> values) {
  Data d;
  d.type = type;
  d.dims = std::move(dims);
  d.values = std::move(values);
  const std::vector<Data::Layout> layouts = {Data::contiguous, Data::chunked, Data::gzip,
                                             Data::compact};
  d.layout = rng.pick(layouts);
  d.chunk_rows = static_cast<hsize_t>(rng.range(1, 16));
  d.unlimited = d.layout != Data::contiguous && d.layout != Data::compact && rng.chance(0.2);
  return d;
}

// k distinct experts of E for every one of T tokens.
std::vector<double> random_ids(Rng& rng, int E, int k, std::int64_t T) {
  std::vector<double> ids;
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<std::int64_t> row;
    while (static_cast<int>(row.size()) < k) {
      const auto e = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(E)));
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    for (std::int64_t e : row) ids.push_back(static_cast<double>(e));
  }
  return ids;
}

std::vector<double> random_weights(Rng& rng, int k, std::int64_t T) {
  const int mode = static_cast<int>(rng.below(3));
  std::vector<double> w;
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<double> row(static_cast<std::size_t>(k));
    double sum = 0;
    for (double& x : row) {
      x = mode == 0 ? 0.05 + rng.uniform() : mode == 1 ? 4 * rng.uniform() - 2 : 0.0;
      sum += x;
    }
    for (double x : row) w.push_back(mode == 0 ? x / sum : x);
  }
  return w;
}

hid_t ids_type(Rng& rng, int E) {
  std::vector<hid_t> types = {H5T_STD_I16LE, H5T_STD_I32LE, H5T_STD_I32BE, H5T_STD_U32LE,
                              H5T_STD_I64LE, H5T_STD_I64BE, H5T_STD_U64LE};
  if (E <= 128) types.push_back(H5T_STD_I8LE);
  if (E <= 256) types.push_back(H5T_STD_U8LE);
  if (E > 32768) types.erase(types.begin());
  return rng.pick(types);
}

// IEEE half precision, which HDF5 1.10 has no predefined type for: a float
// type all the same, converted by HDF5's own (soft) conversion.
hid_t half_type() {
  static const hid_t half = [] {
    const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    check(t >= 0 && H5Tset_fields(t, 15, 10, 5, 0, 10) >= 0 && H5Tset_size(t, 2) >= 0 &&
              H5Tset_ebias(t, 15) >= 0 && H5Tlock(t) >= 0,
          "half type");
    return t;
  }();
  return half;
}

hid_t weights_type(Rng& rng) {
  const std::vector<hid_t> types = {H5T_IEEE_F32LE, H5T_IEEE_F32LE, H5T_IEEE_F32BE,
                                    H5T_IEEE_F64LE, H5T_IEEE_F64BE, half_type()};
  return rng.pick(types);
}

Layer valid_layer(Rng& rng, int index, int E, int k, std::int64_t T) {
  Layer l;
  l.name = std::to_string(index);
  l.attrs.push_back(int_attr(rng, "layer", index));
  const std::vector<hsize_t> dims = {static_cast<hsize_t>(T), static_cast<hsize_t>(k)};
  l.ids = numeric_data(rng, ids_type(rng, E), dims, random_ids(rng, E, k, T));
  l.weights = numeric_data(rng, weights_type(rng), dims, random_weights(rng, k, T));
  l.extra = rng.chance(0.15);
  return l;
}

// A valid trace: random shape (sometimes no tokens, rarely 2^20 experts),
// integer and float types, layouts, string kinds, optional attributes left
// out, unknown attributes and datasets added.
Spec valid_spec(Rng& rng) {
  Spec s;
  s.experts = rng.chance(0.02) ? (1 << 20) : static_cast<int>(rng.range(1, 64));
  s.top_k = static_cast<int>(rng.range(1, std::min(s.experts, 8)));
  s.tokens = rng.chance(0.1) ? 0 : rng.range(1, 64);
  const int L = static_cast<int>(rng.range(1, 3));
  std::vector<int> indices;
  const int span = rng.chance(0.5) ? L : 100;
  if (rng.chance(0.05)) indices.push_back(999999999);  // the largest name of 9 digits
  while (static_cast<int>(indices.size()) < L) {
    const int i = static_cast<int>(rng.below(static_cast<std::uint64_t>(span)));
    if (std::find(indices.begin(), indices.end(), i) == indices.end()) indices.push_back(i);
  }

  s.root.push_back(string_attr(rng, "format", "kokkos-moe-trace"));
  s.root.push_back(int_attr(rng, "version", 1));
  s.root.push_back(int_attr(rng, "num_experts", s.experts));
  s.root.push_back(int_attr(rng, "top_k", s.top_k));
  s.root.push_back(int_attr(rng, "num_layers", L));
  for (const char* name : {"model", "source", "note"})
    if (rng.chance(0.8)) s.root.push_back(string_attr(rng, name, some_text(rng)));
  for (const char* name : {"hidden_size", "ffn_size"})
    if (rng.chance(0.8))
      s.root.push_back(int_attr(rng, name, rng.chance(0.8) ? rng.range(0, 64) : (1 << 20)));
  if (rng.chance(0.2)) s.root.push_back(int_attr(rng, "answer", 42));
  if (rng.chance(0.2)) s.root.push_back(string_attr(rng, "created_by", "fuzz"));
  rng.shuffle(s.root);

  for (int index : indices)
    s.layers.push_back(valid_layer(rng, index, s.experts, s.top_k, s.tokens));
  if (rng.chance(0.3)) {
    std::vector<double> seq;
    for (std::int64_t t = 0; t < s.tokens; ++t) seq.push_back(static_cast<double>(t / 3));
    const std::vector<hid_t> types = {H5T_STD_I32LE, H5T_STD_I64BE, H5T_STD_U16LE};
    s.sequence = numeric_data(rng, rng.pick(types), {static_cast<hsize_t>(s.tokens)}, seq);
  } else {
    s.sequence.present = false;
  }
  s.latest_format = rng.chance(0.3);
  s.extra_root = rng.chance(0.2);
  return s;
}

// ----------------------------------------------------------------- writing

void write_attr(hid_t obj, const Attr& a) {
  const hsize_t one = 1, two = 2;
  const bool pair = a.kind == Attr::int_pair || a.kind == Attr::string_pair;
  hid_t space = a.kind == Attr::null_space ? H5Screate(H5S_NULL)
                : pair                     ? H5Screate_simple(1, &two, nullptr)
                : a.one_element_array      ? H5Screate_simple(1, &one, nullptr)
                                           : H5Screate(H5S_SCALAR);
  check(space >= 0, "attribute space");
  hid_t type = -1;
  const bool is_string = a.kind == Attr::string_vlen || a.kind == Attr::string_fixed ||
                         a.kind == Attr::string_fixed_space || a.kind == Attr::string_pair;
  std::string fixed;
  if (is_string) {
    type = H5Tcopy(H5T_C_S1);
    check(H5Tset_cset(type, a.cset) >= 0, "cset");
    if (a.kind == Attr::string_fixed || a.kind == Attr::string_fixed_space) {
      const bool space_pad = a.kind == Attr::string_fixed_space;
      fixed = a.text + std::string(space_pad ? 3 : 1, space_pad ? ' ' : '\0');
      check(H5Tset_size(type, fixed.size()) >= 0, "size");
      check(H5Tset_strpad(type, space_pad ? H5T_STR_SPACEPAD : H5T_STR_NULLPAD) >= 0, "strpad");
    } else {
      check(H5Tset_size(type, H5T_VARIABLE) >= 0, "size");
    }
  } else {
    type = H5Tcopy(a.kind == Attr::floating ? H5T_IEEE_F64LE : a.type);
  }
  hid_t attr = H5Acreate2(obj, a.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  check(attr >= 0, "attribute " + a.name);
  herr_t status = 0;
  const char* texts[2] = {a.text.c_str(), a.text.c_str()};
  const std::int64_t values[2] = {a.value, a.value};
  const double real = static_cast<double>(a.value);
  switch (a.kind) {
    case Attr::integer:
    case Attr::int_pair: status = H5Awrite(attr, H5T_NATIVE_INT64, values); break;
    case Attr::floating: status = H5Awrite(attr, H5T_NATIVE_DOUBLE, &real); break;
    case Attr::null_space: break;
    case Attr::string_vlen:
    case Attr::string_pair: status = H5Awrite(attr, type, texts); break;
    case Attr::string_fixed:
    case Attr::string_fixed_space: status = H5Awrite(attr, type, fixed.data()); break;
  }
  check(status >= 0, "write attribute " + a.name);
  H5Aclose(attr);
  H5Tclose(type);
  H5Sclose(space);
}

void write_data(hid_t loc, const char* name, const Data& d) {
  if (!d.present) return;
  if (d.kind == Data::group) {
    hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(g >= 0, name);
    H5Gclose(g);
    return;
  }
  hid_t type = -1;
  switch (d.kind) {
    case Data::numeric: type = H5Tcopy(d.type); break;
    case Data::string:
      type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, H5T_VARIABLE);
      break;
    case Data::compound:
      type = H5Tcreate(H5T_COMPOUND, 8);
      H5Tinsert(type, "a", 0, H5T_NATIVE_INT32);
      H5Tinsert(type, "b", 4, H5T_NATIVE_FLOAT);
      break;
    case Data::enumeration: {
      type = H5Tenum_create(H5T_NATIVE_INT32);
      const int zero = 0, one = 1;
      H5Tenum_insert(type, "zero", &zero);
      H5Tenum_insert(type, "one", &one);
      break;
    }
    case Data::group: break;
  }
  check(type >= 0, std::string("type of ") + name);

  const bool simple = !d.null_space && !d.scalar_space;
  const bool any_zero = std::find(d.dims.begin(), d.dims.end(), hsize_t(0)) != d.dims.end();
  const bool chunked = simple && !d.dims.empty() &&
                       (d.layout == Data::chunked || d.layout == Data::gzip || d.unlimited) &&
                       (!any_zero || d.unlimited);
  std::vector<hsize_t> maxdims(d.dims);
  if (chunked && d.unlimited) maxdims[0] = H5S_UNLIMITED;
  hid_t space = d.null_space     ? H5Screate(H5S_NULL)
                : d.scalar_space ? H5Screate(H5S_SCALAR)
                                 : H5Screate_simple(static_cast<int>(d.dims.size()), d.dims.data(),
                                                    maxdims.data());
  check(space >= 0, std::string("space of ") + name);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) {
    std::vector<hsize_t> chunk(d.dims);
    for (hsize_t& c : chunk) c = std::max<hsize_t>(1, std::min<hsize_t>(c, 64));
    chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(d.dims[0], d.chunk_rows));
    check(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) >= 0, "chunk");
    if (d.layout == Data::gzip)
      check(H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, 4) >= 0, "deflate");
  } else if (simple && d.layout == Data::compact && d.values.size() < 4096) {
    check(H5Pset_layout(dcpl, H5D_COMPACT) >= 0, "compact");
  }
  hid_t ds = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  check(ds >= 0, std::string("dataset ") + name);
  const hssize_t points = H5Sget_simple_extent_npoints(space);
  if (d.write && d.kind == Data::numeric && !d.null_space && points > 0) {
    check(static_cast<hssize_t>(d.values.size()) == points, std::string("values of ") + name);
    check(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()) >= 0,
          std::string("write ") + name);
  }
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(type);
}

void write_small_dataset(hid_t loc, const char* name) {
  Data d;
  d.type = H5T_STD_I32LE;
  d.dims = {1};
  d.values = {7};
  d.layout = Data::contiguous;
  write_data(loc, name, d);
}

void write_spec(const std::string& path, const Spec& s) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (s.latest_format)
    check(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0, "libver");
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  check(file >= 0, "create " + path);
  for (const Attr& a : s.root) write_attr(file, a);
  switch (s.layers_kind) {
    case Spec::missing: break;
    case Spec::dataset: write_small_dataset(file, "layers"); break;
    case Spec::dangling:
      check(H5Lcreate_soft("/nowhere", file, "layers", H5P_DEFAULT, H5P_DEFAULT) >= 0, "soft");
      break;
    case Spec::group: {
      hid_t layers = H5Gcreate2(file, "layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      check(layers >= 0, "layers");
      for (const Layer& l : s.layers) {
        const char* name = l.name.c_str();
        switch (l.link) {
          case Layer::group: {
            hid_t g = H5Gcreate2(layers, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            check(g >= 0, "layer group " + l.name);
            for (const Attr& a : l.attrs) write_attr(g, a);
            write_data(g, "expert_ids", l.ids);
            write_data(g, "weights", l.weights);
            if (l.extra) {
              write_small_dataset(g, "router_logits_note");
              Attr a;
              a.name = "comment";
              a.kind = Attr::string_vlen;
              a.text = "ignored";
              write_attr(g, a);
            }
            H5Gclose(g);
            break;
          }
          case Layer::dataset: write_small_dataset(layers, name); break;
          case Layer::dangling:
            check(H5Lcreate_soft("/nowhere", layers, name, H5P_DEFAULT, H5P_DEFAULT) >= 0, "soft");
            break;
          case Layer::hard_to_first:
            check(H5Lcreate_hard(layers, s.layers.front().name.c_str(), layers, name, H5P_DEFAULT,
                                 H5P_DEFAULT) >= 0,
                  "hard link");
            break;
          case Layer::external:
            check(H5Lcreate_external("fuzz-no-such-file.h5", "/layers/0", layers, name, H5P_DEFAULT,
                                     H5P_DEFAULT) >= 0,
                  "external link");
            break;
        }
      }
      H5Gclose(layers);
      break;
    }
  }
  write_data(file, "sequence_id", s.sequence);
  if (s.extra_root) write_small_dataset(file, "extra");
  check(H5Fclose(file) >= 0, "close " + path);
  H5Pclose(fapl);
}

// ----------------------------------------------------------------- defects

// Each defect makes a valid spec invalid and says what it did, or returns ""
// when it does not apply to this spec (another is drawn).
using Defect = std::function<std::string(Spec&, Rng&)>;

const char* const kRequired[] = {"format", "version", "num_experts", "top_k", "num_layers"};

std::string required_name(Rng& rng) { return kRequired[rng.below(5)]; }

// Sets an integer attribute (signed 64-bit, so that any value is kept).
void set_int(Spec& s, const std::string& name, std::int64_t v) {
  Attr* a = find_attr(s.root, name);
  if (!a) {
    s.root.emplace_back();
    a = &s.root.back();
    a->name = name;
  }
  a->kind = Attr::integer;
  a->type = H5T_STD_I64LE;
  a->value = v;
}

std::int64_t root_int(Spec& s, const std::string& name) {
  const Attr* a = find_attr(s.root, name);
  return a ? a->value : 0;
}

// Adds a valid layer so that a defect between layers can apply.
void ensure_two_layers(Spec& s, Rng& rng) {
  if (s.layers.size() >= 2) return;
  int index = 0;
  for (const Layer& l : s.layers) index = std::max(index, std::stoi(l.name) + 1);
  s.layers.push_back(valid_layer(rng, index, s.experts, s.top_k, s.tokens));
  set_int(s, "num_layers", static_cast<std::int64_t>(s.layers.size()));
}

Layer& some_layer(Spec& s, Rng& rng) { return s.layers[rng.below(s.layers.size())]; }

Data& ids_or_weights(Layer& l, Rng& rng, std::string& which) {
  const bool ids = rng.chance(0.5);
  which = ids ? "expert_ids" : "weights";
  return ids ? l.ids : l.weights;
}

std::string shape(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::vector<Defect> defects() {
  const std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
  const std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
  std::vector<Defect> d;
  // Root attributes.
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = required_name(rng);
    erase_attr(s.root, name);
    return "attribute '" + name + "' missing";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = kRequired[1 + rng.below(4)];
    Attr* a = find_attr(s.root, name);
    a->kind = rng.chance(0.5) ? Attr::string_vlen : Attr::string_fixed;
    a->text = std::to_string(a->value);
    return "integer attribute '" + name + "' as a string";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = kRequired[1 + rng.below(4)];
    find_attr(s.root, name)->kind = Attr::floating;
    return "integer attribute '" + name + "' as a float";
  });
  d.push_back([](Spec& s, Rng& rng) {
    Attr* a = find_attr(s.root, "format");
    a->kind = Attr::integer;
    a->type = int_type_for(rng, 1);
    a->value = 1;
    return std::string("attribute 'format' as an integer");
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = required_name(rng);
    Attr* a = find_attr(s.root, name);
    a->kind = name == "format" ? Attr::string_pair : Attr::int_pair;
    return "attribute '" + name + "' with two values";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = required_name(rng);
    find_attr(s.root, name)->kind = Attr::null_space;
    return "attribute '" + name + "' with no value (null dataspace)";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::vector<std::string> texts = {"kokkos-moe-trace ",
                                            "KOKKOS-MOE-TRACE",
                                            "",
                                            "kokkos-moe-trace\n",
                                            "kokkos-moe-trac",
                                            "\x1b[2Jkokkos",
                                            "kokkos-moe-trace-v2",
                                            std::string(5000, 'x') + "\n\x1b[31m"};
    Attr* a = find_attr(s.root, "format");
    a->kind = Attr::string_vlen;
    a->text = rng.pick(texts);
    return "attribute 'format' is '" + a->text.substr(0, 20) + "'";
  });
  d.push_back([i64min](Spec& s, Rng& rng) {
    const std::vector<std::int64_t> v = {0, 2, -1, std::int64_t(1) << 40, i64min};
    set_int(s, "version", rng.pick(v));
    return "version " + std::to_string(root_int(s, "version"));
  });
  d.push_back([i64max](Spec& s, Rng& rng) {
    const std::vector<std::int64_t> v = {0, -1, (1 << 20) + 1, std::int64_t(1) << 31, i64max};
    set_int(s, "num_experts", rng.pick(v));
    return "num_experts " + std::to_string(root_int(s, "num_experts"));
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::vector<std::int64_t> v = {0, -1, s.experts + 1, std::int64_t(1) << 31};
    set_int(s, "top_k", rng.pick(v));
    return "top_k " + std::to_string(root_int(s, "top_k"));
  });
  d.push_back([](Spec& s, Rng& rng) {
    const auto L = static_cast<std::int64_t>(s.layers.size());
    const std::vector<std::int64_t> v = {L + 1, L - 1, -1, 0, std::int64_t(1) << 40};
    set_int(s, "num_layers", rng.pick(v));
    return "num_layers " + std::to_string(root_int(s, "num_layers")) + " for " + std::to_string(L) +
           " layers";
  });
  d.push_back([i64max, i64min](Spec& s, Rng& rng) {
    const std::string name = rng.chance(0.5) ? "hidden_size" : "ffn_size";
    const std::vector<std::int64_t> v = {-1, (1 << 20) + 1, i64max, i64min};
    set_int(s, name, rng.pick(v));
    return name + " " + std::to_string(root_int(s, name));
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::string name = rng.chance(0.5) ? "hidden_size" : "ffn_size";
    erase_attr(s.root, name);
    s.root.push_back(string_attr(rng, name, "64"));
    return "optional integer attribute '" + name + "' as a string";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const std::vector<std::string> names = {"model", "source", "note"};
    const std::string name = rng.pick(names);
    erase_attr(s.root, name);
    if (rng.chance(0.5)) {
      s.root.push_back(int_attr(rng, name, 7));
      return "optional string attribute '" + name + "' as an integer";
    }
    Attr a = string_attr(rng, name, "two");
    a.kind = Attr::string_pair;
    s.root.push_back(a);
    return "optional string attribute '" + name + "' with two values";
  });
  // The layers group.
  d.push_back([](Spec& s, Rng& rng) {
    const std::vector<Spec::LayersKind> kinds = {Spec::missing, Spec::dataset, Spec::dangling};
    s.layers_kind = rng.pick(kinds);
    return std::string(s.layers_kind == Spec::missing   ? "no '/layers'"
                       : s.layers_kind == Spec::dataset ? "'/layers' is a dataset"
                                                        : "'/layers' is a dangling soft link");
  });
  d.push_back([](Spec& s, Rng& rng) {
    s.layers.clear();
    if (rng.chance(0.5)) set_int(s, "num_layers", 0);
    return std::string("'/layers' empty");
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    const std::vector<std::string> bad = {"0" + l.name, "+" + l.name,  "-" + l.name, l.name + ".0",
                                          "abc",        " " + l.name,  l.name + " ", "1234567890",
                                          "\xd9\xa3",   l.name + "\n", "x\x1b[2J",   "99999999999",
                                          "0x" + l.name};
    l.name = rng.pick(bad);
    return "layer group named '" + l.name + "'";
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    Attr* a = find_attr(l.attrs, "layer");
    switch (rng.below(5)) {
      case 0: erase_attr(l.attrs, "layer"); return "layer " + l.name + ": no 'layer' attribute";
      case 1: a->value += 1; break;
      case 2: a->value = -1; break;
      case 3: a->kind = Attr::int_pair; return "layer " + l.name + ": 'layer' with two values";
      default:
        a->kind = Attr::string_vlen;
        a->text = l.name;
        return "layer " + l.name + ": 'layer' as a string";
    }
    a->type = H5T_STD_I64LE;
    return "layer " + l.name + ": attribute 'layer' is " + std::to_string(a->value);
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    const std::vector<Layer::Link> links = {Layer::dataset, Layer::dangling, Layer::external};
    l.link = rng.pick(links);
    return "layer " + l.name + " is " +
           (l.link == Layer::dataset    ? "a dataset"
            : l.link == Layer::dangling ? "a dangling soft link"
                                        : "an external link to a missing file");
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer l;
    int index = 0;
    for (const Layer& other : s.layers) index = std::max(index, std::stoi(other.name) + 1);
    l.name = std::to_string(index);
    l.link = Layer::hard_to_first;
    s.layers.push_back(l);
    if (rng.chance(0.7)) set_int(s, "num_layers", static_cast<std::int64_t>(s.layers.size()));
    return "layer " + l.name + " a hard link to layer " + s.layers.front().name;
  });
  // The datasets of a layer.
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    std::string which;
    ids_or_weights(l, rng, which).present = false;
    return "layer " + l.name + ": no '" + which + "'";
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    std::string which;
    Data& data = ids_or_weights(l, rng, which);
    const std::vector<Data::Kind> kinds = {Data::string, Data::compound, Data::enumeration,
                                           Data::group, Data::numeric};
    data.kind = rng.pick(kinds);
    if (data.kind == Data::numeric) {  // the other class
      data.type = which == "expert_ids" ? H5T_IEEE_F32LE : H5T_STD_I32LE;
      return "layer " + l.name + ": '" + which + "' of the wrong numeric class";
    }
    return "layer " + l.name + ": '" + which + "' is " +
           (data.kind == Data::string     ? "a string dataset"
            : data.kind == Data::compound ? "a compound dataset"
            : data.kind == Data::group    ? "a group"
                                          : "an enum dataset");
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    std::string which;
    Data& data = ids_or_weights(l, rng, which);
    const auto T = static_cast<hsize_t>(s.tokens), k = static_cast<hsize_t>(s.top_k);
    switch (rng.below(4)) {
      case 0: data.dims = {T * k}; break;
      case 1: data.dims = {T, k, 1}; break;
      case 2:
        data.scalar_space = true;
        data.values.resize(1, 0.0);
        return "layer " + l.name + ": '" + which + "' scalar";
      default:
        data.null_space = true;
        return "layer " + l.name + ": '" + which + "' with a null dataspace";
    }
    return "layer " + l.name + ": '" + which + "' of shape " + shape(data.dims);
  });
  d.push_back([](Spec& s, Rng& rng) {
    // Both datasets with another column count than top_k.
    Layer& l = some_layer(s, rng);
    const auto T = static_cast<hsize_t>(s.tokens);
    const hsize_t k = static_cast<hsize_t>(s.top_k);
    const hsize_t cols = s.top_k >= 2 && rng.chance(0.5) ? k - 1 : rng.chance(0.2) ? 0 : k + 1;
    for (Data* data : {&l.ids, &l.weights}) {
      data->dims = {T, cols};
      data->values.assign(static_cast<std::size_t>(T * cols), 0.0);
      for (std::size_t i = 0; i < data->values.size(); ++i)
        data->values[i] = static_cast<double>(i % cols);
    }
    return "layer " + l.name + ": " + std::to_string(cols) + " columns for top_k " +
           std::to_string(k);
  });
  d.push_back([](Spec& s, Rng& rng) {
    Layer& l = some_layer(s, rng);
    const auto T = static_cast<hsize_t>(s.tokens), k = static_cast<hsize_t>(s.top_k);
    std::vector<std::vector<hsize_t>> shapes = {{T + 1, k}, {T, k + 1}, {T * k}};
    if (T != k) shapes.push_back({k, T});
    l.weights.dims = rng.pick(shapes);
    hsize_t n = 1;
    for (hsize_t x : l.weights.dims) n *= x;
    l.weights.values.assign(static_cast<std::size_t>(n), 0.5);
    return "layer " + l.name + ": weights of shape " + shape(l.weights.dims) + ", ids " +
           shape(l.ids.dims);
  });
  d.push_back([](Spec& s, Rng& rng) {
    ensure_two_layers(s, rng);
    Layer& l = s.layers[1 + rng.below(s.layers.size() - 1)];
    const std::int64_t T = s.tokens == 0 || rng.chance(0.5) ? s.tokens + 1 : s.tokens - 1;
    l = valid_layer(rng, std::stoi(l.name), s.experts, s.top_k, T);
    return "layer " + l.name + " has " + std::to_string(T) + " tokens, the others " +
           std::to_string(s.tokens);
  });
  // Values.
  d.push_back([](Spec& s, Rng& rng) -> std::string {
    if (s.tokens == 0) return "";
    Layer& l = some_layer(s, rng);
    const std::vector<double> bad = {static_cast<double>(s.experts),
                                     -1,
                                     2147483647.0,
                                     -2147483648.0,
                                     1099511627776.0,
                                     -1099511627776.0};
    const double v = rng.pick(bad);
    l.ids.values[rng.below(l.ids.values.size())] = v;
    l.ids.type = rng.chance(0.5) ? H5T_STD_I64LE : H5T_STD_I64BE;  // keeps v as it is
    return "layer " + l.name + ": expert id " + std::to_string(static_cast<std::int64_t>(v)) +
           " of E=" + std::to_string(s.experts);
  });
  d.push_back([](Spec& s, Rng& rng) -> std::string {
    if (s.tokens == 0 || s.top_k < 2) return "";
    Layer& l = some_layer(s, rng);
    const auto k = static_cast<std::size_t>(s.top_k);
    const std::size_t row = rng.below(static_cast<std::uint64_t>(s.tokens));
    const std::size_t a = rng.below(k), b = (a + 1 + rng.below(k - 1)) % k;
    l.ids.values[row * k + a] = l.ids.values[row * k + b];
    return "layer " + l.name + ": token " + std::to_string(row) + " chooses an expert twice";
  });
  d.push_back([](Spec& s, Rng& rng) -> std::string {
    if (s.tokens == 0) return "";
    Layer& l = some_layer(s, rng);
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> bad = {std::nan(""), inf, -inf, 1e300, -1e300};
    const double v = rng.pick(bad);
    l.weights.values[rng.below(l.weights.values.size())] = v;
    // 1e300 is finite as a double: stored as one, it becomes infinite as
    // the float the reader converts it to.
    l.weights.type = std::isfinite(v) || rng.chance(0.5) ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
    return "layer " + l.name + ": weight " + std::to_string(v);
  });
  d.push_back([](Spec& s, Rng& rng) {
    // Every layer claims far more rows than it stores.
    const std::vector<hsize_t> rows = {hsize_t(1) << 40, (hsize_t(1) << 31) + 1, hsize_t(1) << 24};
    const hsize_t T = rng.pick(rows);
    const bool contiguous = rng.chance(0.3);
    for (Layer& l : s.layers)
      for (Data* data : {&l.ids, &l.weights}) {
        data->dims = {T, static_cast<hsize_t>(s.top_k)};
        data->write = false;
        data->layout = contiguous && T < (hsize_t(1) << 30) ? Data::contiguous : Data::chunked;
        data->unlimited = false;
      }
    return "every layer claims " + std::to_string(T) + " tokens, none written";
  });
  d.push_back([](Spec& s, Rng& rng) -> std::string {
    if (s.tokens == 0) return "";
    ensure_two_layers(s, rng);
    Layer& l = some_layer(s, rng);
    l = valid_layer(rng, std::stoi(l.name), s.experts, s.top_k, 0);
    return "layer " + l.name + " empty, the others " + std::to_string(s.tokens) + " tokens";
  });
  d.push_back([](Spec& s, Rng& rng) -> std::string {
    // Never written: the fill value 0 everywhere, so every row repeats id 0.
    if (s.tokens == 0 || s.top_k < 2) return "";
    Layer& l = some_layer(s, rng);
    l.ids.write = false;
    return "layer " + l.name + ": 'expert_ids' never written (all 0)";
  });
  d.push_back([](Spec& s, Rng& rng) {
    const auto T = static_cast<hsize_t>(s.tokens);
    Data seq;
    seq.type = H5T_STD_I32LE;
    seq.layout = Data::contiguous;
    std::string what;
    switch (rng.below(5)) {
      case 0: seq.dims = {T + 1}; break;
      case 1: seq.dims = {T, 1}; break;
      case 2:
        seq.scalar_space = true;
        what = "sequence_id scalar";
        break;
      case 3:
        seq.dims = {T};
        seq.type = H5T_IEEE_F32LE;
        what = "sequence_id float";
        break;
      default:
        seq.dims = {T};
        seq.kind = Data::string;
        what = "sequence_id strings";
    }
    hsize_t n = 1;
    for (hsize_t x : seq.dims) n *= x;
    seq.values.assign(static_cast<std::size_t>(n), 1.0);
    s.sequence = seq;
    return what.empty() ? "sequence_id of shape " + shape(seq.dims) : what;
  });
  return d;
}

// ------------------------------------------------------------ byte damage

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("fuzz trace generator: cannot write " + path);
}

// Damages the bytes of a valid file; says what it did and whether the
// result is certainly invalid (a truncated file) or may still read.
std::string damage(std::string& bytes, Rng& rng, bool& invalid) {
  const std::size_t n = bytes.size();
  invalid = false;
  switch (rng.below(6)) {
    case 0: {
      const std::size_t keep = rng.chance(0.1) ? 0 : rng.below(n);
      bytes.resize(keep);
      invalid = true;
      return "truncated to " + std::to_string(keep) + " of " + std::to_string(n) + " bytes";
    }
    case 1:
    case 2: {
      // Never the 8-byte signature, so that most still look like HDF5.
      const int changes = 1 + static_cast<int>(rng.below(8));
      for (int c = 0; c < changes; ++c) {
        const std::size_t at = 8 + rng.below(n - 8);
        bytes[at] = static_cast<char>(bytes[at] ^ (1 + rng.below(255)));
      }
      return std::to_string(changes) + " bytes changed";
    }
    case 3: {
      const std::size_t at = 8 + rng.below(n - 8), len = 1 + rng.below(64);
      const char fill = rng.chance(0.5) ? '\0' : '\xff';
      for (std::size_t i = at; i < std::min(n, at + len); ++i) bytes[i] = fill;
      return std::to_string(len) + " bytes at " + std::to_string(at) + " overwritten";
    }
    case 4: {
      const std::size_t from = rng.below(n), to = 8 + rng.below(n - 8), len = 1 + rng.below(256);
      const std::string piece = bytes.substr(from, len);
      bytes.replace(to, std::min(piece.size(), n - to), piece.substr(0, n - to));
      return std::to_string(piece.size()) + " bytes from " + std::to_string(from) + " copied to " +
             std::to_string(to);
    }
    default: {
      std::string junk(1 + rng.below(1024), '\0');
      for (char& c : junk) c = static_cast<char>(rng.below(256));
      if (rng.chance(0.5)) {
        bytes += junk;
        return std::to_string(junk.size()) + " bytes appended";
      }
      bytes = junk + bytes;
      return std::to_string(junk.size()) + " bytes prepended";
    }
  }
}

// ---------------------------------------------------------------- commands

// The file's case: read by validate, info or replay, in random order of
// the arguments, with a random --reader unless only the isolated reader can
// take the file (damaged bytes crash or hang HDF5 1.10 itself, which only
// the isolated reader survives: docs/trace-format.md).
Case command_for(Rng& rng, const Context& ctx, const std::string& path, bool replayable,
                 bool isolated_only) {
  Case c;
  std::vector<std::vector<std::string>> items = {{path}};
  const std::vector<std::vector<std::string>> readers =
      isolated_only
          ? std::vector<std::vector<std::string>>{{"--reader", "isolated"}, {"--reader=isolated"}}
          : std::vector<std::vector<std::string>>{{"--reader", "isolated"},
                                                  {"--reader=in-process"},
                                                  {"--reader", "in-process"}};
  if (rng.chance(0.4)) items.push_back(rng.pick(readers));
  const std::uint64_t which = replayable ? rng.below(10) : rng.below(7);
  if (which < 7) {
    const bool info = which >= 5;
    c.argv = {ctx.trace_exe, info ? "info" : "validate"};
    c.failure_codes = {1};
    c.success_stdout = info ? "median busiest/mean" : "OK: ";
  } else {
    // A small fixed shape: the file's hidden_size and ffn_size need not
    // give one, and a replay stays quick.
    items.push_back({"--hidden", "16"});
    items.push_back({"--ffn", "16"});
    items.push_back({"--repeat", "1"});
    items.push_back({"--warmup", "0"});
    const std::vector<std::string> dtypes = {"bf16", "fp16", "fp32", "fp8"};
    if (rng.chance(0.3)) items.push_back({"--dtype", rng.pick(dtypes)});
    c.argv = {ctx.replay_exe};
    c.failure_codes = {3};
    c.success_stdout = "kokkos-moe-replay";
  }
  rng.shuffle(items);
  for (const auto& item : items) c.argv.insert(c.argv.end(), item.begin(), item.end());
  return c;
}

}  // namespace

Case trace_file_case(Rng& rng, int id, const Context& ctx) {
  const std::string path = ctx.dir + "/case-" + std::to_string(id) + ".h5";
  const std::uint64_t kind = rng.below(4);
  if (kind == 0) {  // damaged bytes of a valid file
    std::string base_what;
    std::string bytes;
    bool replayable = true;
    if (rng.chance(0.3)) {
      const bool mixtral = rng.chance(0.5);
      bytes = read_bytes(mixtral ? ctx.mixtral : ctx.custom);
      base_what = mixtral ? "synth mixtral-8x7b trace" : "synth custom trace";
    } else {
      Spec s = valid_spec(rng);
      write_spec(path, s);
      bytes = read_bytes(path);
      base_what = "valid trace";
      replayable = s.experts <= 64;
    }
    bool invalid = false;
    const std::string what = damage(bytes, rng, invalid);
    write_bytes(path, bytes);
    Case c = command_for(rng, ctx, path, replayable, true);
    c.what = base_what + ", " + what;
    c.expect = invalid ? Expect::failure : Expect::either;
    // A damaged file that still reads may say anything about its shape, so
    // a replay of it may fail for other reasons than the trace (e.g. an
    // allocation of its expert count).
    if (c.failure_codes == std::vector<int>{3}) c.failure_codes.clear();
    return c;
  }
  Spec s = valid_spec(rng);
  std::string what = "valid trace: E=" + std::to_string(s.experts) +
                     " k=" + std::to_string(s.top_k) + " T=" + std::to_string(s.tokens) + ", " +
                     std::to_string(s.layers.size()) + " layers";
  Expect expect = Expect::success;
  if (kind >= 2) {  // one defect
    static const std::vector<Defect> all = defects();
    for (std::string d; d.empty();) d = what = all[rng.below(all.size())](s, rng);
    expect = Expect::failure;
  }
  write_spec(path, s);
  Case c = command_for(rng, ctx, path, s.experts <= 64, false);
  c.what = what;
  c.expect = expect;
  return c;
}

}  // namespace Fuzz
}  // namespace KokkosMoE
