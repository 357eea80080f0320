import sys
root, policy = sys.argv[1], sys.argv[2]   # policy: evict_last | evict_first
def sub(p, old, new, cnt=1):
    p = root + '/' + p
    s = open(p).read()
    assert s.count(old) == cnt, (p, old[:60], s.count(old))
    open(p, 'w').write(s.replace(old, new))
sub('src/KokkosMoE_Cuda_TensorMap.hpp', """#else
KOKKOS_INLINE_FUNCTION void acquire(const void*) {}""", """__device__ inline void load_weights(void* dst, const void* map, int col, int row, std::uint64_t* barrier) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(barrier));
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::%s.b64 %%0, 1.0;\\n" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%%0], [%%1, {%%2, %%3}], [%%4], %%5;\\n" ::"r"(d),
      "l"(map), "r"(col), "r"(row), "r"(b), "l"(policy)
      : "memory");
}
#else
KOKKOS_INLINE_FUNCTION void load_weights(void*, const void*, int, int, std::uint64_t*) {}
KOKKOS_INLINE_FUNCTION void acquire(const void*) {}""".replace('%s', policy).replace('%%', '%'))
sub('src/KokkosMoE_Cuda_Fragment.hpp', """  KOKKOS_INLINE_FUNCTION static void expect_bytes(""", """  KOKKOS_INLINE_FUNCTION static void bulk_load_weights(const typename Base::tile& t, const void* map,
                                               int row, int col, std::uint64_t* barrier) {
    tensor_map::load_weights(t.data(), map, col, row, barrier);
  }
  KOKKOS_INLINE_FUNCTION static void expect_bytes(""")
E = 'src/KokkosMoE_ExpertMLP_Impl.hpp'
sub(E, "frag::bulk_load(base::stage(t.ws, 2 * b, BN), this->map(gate_map)", "frag::bulk_load_weights(base::stage(t.ws, 2 * b, BN), this->map(gate_map)")
sub(E, "frag::bulk_load(base::stage(t.ws, 2 * b + 1, BN), this->map(up_map)", "frag::bulk_load_weights(base::stage(t.ws, 2 * b + 1, BN), this->map(up_map)")
sub(E, "frag::bulk_load(base::stage(t.ds, b, BN), this->map(down_map)", "frag::bulk_load_weights(base::stage(t.ds, b, BN), this->map(down_map)")
