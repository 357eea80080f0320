def sub(p, old, new, cnt=1):
    s=open(p).read()
    assert old in s, (p, old[:70])
    s=s.replace(old,new,cnt)
    open(p,'w').write(s)
F='/work/main/src/KokkosMoE_Cuda_Fragment.hpp'
sub(F, """  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const typename Base::tile& a,
                                            Pairs&&... b_acc) {
    if (multiplier(member)) Base::mma_nt(member, a, b_acc...);
  }""", """  // Whether the calling thread's warpgroup has any of the first `rows` rows
  // of the tile (each multiplies 64); warp-uniform. The others skip their
  // multiplies: an expert's last tile is often mostly empty.
  template <class Member>
  KOKKOS_INLINE_FUNCTION static bool multiplies_rows(const Member& member, int rows) {
#ifdef KOKKOSMOE_CUDA_WARPGROUP_MMA
    return warpgroup::index(member.team_rank()) * 64 < rows;
#else
    return (member.team_rank() / 128) * 64 < rows;
#endif
  }
  template <class Member, class... Pairs>
  KOKKOS_INLINE_FUNCTION static void mma_nt(const Member& member, const typename Base::tile& a,
                                            Pairs&&... b_acc) {
    if (multiplier(member)) Base::mma_nt(member, a, b_acc...);
  }""")
E='/work/main/src/KokkosMoE_ExpertMLP_Impl.hpp'
sub(E, """      kernel.zero(m, acc);
      const int steps = steps_of(w);
      for (int s = 0; s < steps; ++s, ++g) {
        pipe.wait_loaded(g, plain_writes);
        kernel.multiply(m, t, g % S, acc);""", """      kernel.zero(m, acc);
      const int steps = steps_of(w);
      const bool multiplies = frag::multiplies_rows(m, w.rows);
      for (int s = 0; s < steps; ++s, ++g) {
        pipe.wait_loaded(g, plain_writes);
        if (multiplies) kernel.multiply(m, t, g % S, acc);""")
