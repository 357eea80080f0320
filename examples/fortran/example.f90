! SPDX-License-Identifier: BSD-3-Clause
! KokkosMoE from Fortran: a small softmax-top-k layer (E=4, k=2, H=32, F=48)
! with deterministic weights, run through the kmoe_layer_t wrapper and checked
! against a double precision reference computed here. Arrays are column-major
! views of the C layout: x(H, T), gate(H, F, E), down(F, H, E), router(H, E).
program kokkos_moe_example
  use, intrinsic :: iso_c_binding
  use kokkos_moe
  implicit none
  integer, parameter :: E = 4, K = 2, H = 32, F = 48, T = 6
  real(c_float), allocatable :: router(:, :), gate(:, :, :), up(:, :, :), down(:, :, :)
  real(c_float), allocatable :: x(:, :), out(:, :)
  real(c_double), allocatable :: ref(:, :)
  type(kmoe_config) :: config
  type(kmoe_layer_t) :: layer
  integer :: tok
  real(c_double) :: err

  allocate(router(H, E), gate(H, F, E), up(H, F, E), down(F, H, E), x(H, T), out(H, T), ref(H, T))
  call fill(router, size(router), 1, 0.5d0)
  call fill(gate, size(gate), 2, 0.35d0)
  call fill(up, size(up), 3, 0.35d0)
  call fill(down, size(down), 4, 0.3d0)
  call fill(x, size(x), 5, 1.0d0)
  do tok = 1, T
    call reference(x(:, tok), ref(:, tok))
  end do

  call check(kmoe_initialize(0_c_int, c_null_ptr))
  call kmoe_config_init(config)
  config%num_experts = E
  config%top_k = K
  config%hidden_size = H
  config%ffn_size = F
  config%max_tokens = T
  config%dtype = KMOE_FP32
  call check(layer%create(config, router, gate, up, down))
  call check(layer%forward(x, out, T))
  call layer%destroy()
  call check(kmoe_finalize())

  err = 0
  do tok = 1, T
    err = max(err, maxval(abs(out(:, tok) - ref(:, tok))) / maxval(abs(ref(:, tok))))
  end do
  if (err < 1d-4) then
    write (*, '(a, es9.2, a)') 'Fortran example: E=4 k=2 H=32 F=48 T=6, max error ', err, ', PASSED'
  else
    write (*, '(a, es9.2, a)') 'Fortran example: max error ', err, ', FAILED'
    error stop 1
  end if
  deallocate(router, gate, up, down, x, out, ref)

contains

  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= KMOE_SUCCESS) then
      write (*, '(a, i0, 2a)') 'kokkos_moe error ', status, ': ', kmoe_error_message()
      error stop 1
    end if
  end subroutine

  ! The same generator as the C example: values in [-scale, scale).
  subroutine fill(a, length, seed, scale)
    integer, intent(in) :: length, seed
    real(c_float), intent(out) :: a(length)
    real(c_double), intent(in) :: scale
    integer(c_int64_t) :: s
    integer :: i
    s = seed
    do i = 1, length
      s = iand(s * 1664525_c_int64_t + 1013904223_c_int64_t, 4294967295_c_int64_t)
      a(i) = real(scale * (real(ishft(s, -8), c_double) / 8388608d0 - 1d0), c_float)
    end do
  end subroutine

  ! Softmax over the router logits, the k best experts renormalised, and the
  ! SwiGLU experts, in double.
  subroutine reference(xt, outt)
    real(c_float), intent(in) :: xt(H)
    real(c_double), intent(out) :: outt(H)
    real(c_double) :: p(E), act(F), g, u, wsum, w(K)
    integer :: ids(K), j, ex, ff, n
    logical :: taken(E)
    do ex = 1, E
      p(ex) = sum(real(xt, c_double) * router(:, ex))
    end do
    p = exp(p - maxval(p))
    p = p / sum(p)
    taken = .false.
    do j = 1, K
      ids(j) = maxloc(p, 1, mask=.not. taken)
      taken(ids(j)) = .true.
      w(j) = p(ids(j))
    end do
    wsum = sum(w)
    outt = 0
    do j = 1, K
      ex = ids(j)
      do ff = 1, F
        g = sum(real(xt, c_double) * gate(:, ff, ex))
        u = sum(real(xt, c_double) * up(:, ff, ex))
        act(ff) = g / (1 + exp(-g)) * u
      end do
      do n = 1, H
        outt(n) = outt(n) + w(j) / wsum * sum(act * down(:, n, ex))
      end do
    end do
  end subroutine

end program kokkos_moe_example
