! SPDX-License-Identifier: BSD-3-Clause
! Error paths of the Fortran wrapper: arrays of the wrong shape, too few
! tokens, a second create and 16-bit storage are refused with a status and
! a message before any call into C (which sees only addresses); and the fp8
! bindings (quantise, create, forward) reach C.
program kokkos_moe_fortran_errors
  use, intrinsic :: iso_c_binding
  use kokkos_moe
  implicit none
  integer, parameter :: E = 4, K = 2, H = 8, F = 6, T = 3
  real(c_float), target :: router(H, E), gate(H, F, E), up(H, F, E), down(F, H, E)
  real(c_float) :: x(H, T), out(H, T), small(H, 2), transposed(T, H), weights(K, T)
  integer(c_int32_t) :: ids(K, T)
  integer(c_int8_t), target :: gate8(H, F, E), up8(H, F, E), down8(F, H, E)
  real(c_float), target :: gate_s(1, 1, E), up_s(1, 1, E), down_s(1, 1, E), nan_gate(H, F, E)
  integer(c_int16_t), target :: x16(H, T), out16(H, T)
  type(c_ptr) :: fp8_layer
  type(kmoe_config) :: config
  type(kmoe_layer_t) :: layer
  integer :: failures = 0

  router = 0.1
  gate = 0.01
  up = 0.01
  down = 0.01
  x = 1
  weights = 0.5
  ids = reshape([0, 1, 2, 3, 1, 2], [K, T])
  call expect(kmoe_initialize(0_c_int, c_null_ptr), KMOE_SUCCESS, "")
  call kmoe_config_init(config)
  config%num_experts = E; config%top_k = K; config%dtype = KMOE_FP32
  config%hidden_size = H; config%ffn_size = F; config%max_tokens = T

  call expect(layer%create(config, router, gate, up, gate), KMOE_ERROR_INVALID_ARGUMENT, &
              "down has shape (8, 6, 4), expected (6, 8, 4)")
  call expect(layer%create(config, router(:, 1:2), gate, up, down), &
              KMOE_ERROR_INVALID_ARGUMENT, "router has shape (8, 2), expected (8, 4)")
  call expect(layer%create(config, router, gate, up, down), KMOE_SUCCESS, "")
  call expect(layer%create(config, router, gate, up, down), KMOE_ERROR_STATE, "destroy it first")
  call expect(layer%forward(transposed, out, T), KMOE_ERROR_INVALID_ARGUMENT, &
              "x's first extent has shape (3), expected (8)")
  call expect(layer%forward(x, small, T), KMOE_ERROR_INVALID_ARGUMENT, &
              "out holds fewer than num_tokens tokens")
  call expect(layer%forward_routed(x, ids(:, 1:2), weights, out, T), &
              KMOE_ERROR_INVALID_ARGUMENT, "ids holds fewer than num_tokens tokens")
  call expect(layer%forward(x, out, T), KMOE_SUCCESS, "")
  call expect(layer%forward_routed(x, ids, weights, out, T), KMOE_SUCCESS, "")
  call layer%destroy()
  config%dtype = KMOE_BF16
  call expect(layer%create(config, router, gate, up, down), KMOE_ERROR_INVALID_ARGUMENT, &
              "fp32 storage only")

  ! fp8 through the C bindings: quantise (a NaN refused), create, forward.
  nan_gate = gate
  nan_gate(3, 2, 1) = transfer(int(z'7fc00000', c_int32_t), 1.0_c_float)
  call expect(kmoe_quantize_fp8(int(E, c_int64_t), int(F, c_int64_t), int(H, c_int64_t), &
              c_loc(nan_gate), c_loc(gate8), c_loc(gate_s)), KMOE_ERROR_INVALID_ARGUMENT, &
              "not finite at expert 0, row 1, column 2")
  call expect(kmoe_quantize_fp8(int(E, c_int64_t), int(F, c_int64_t), int(H, c_int64_t), &
              c_loc(gate), c_loc(gate8), c_loc(gate_s)), KMOE_SUCCESS, "")
  call expect(kmoe_quantize_fp8(int(E, c_int64_t), int(F, c_int64_t), int(H, c_int64_t), &
              c_loc(up), c_loc(up8), c_loc(up_s)), KMOE_SUCCESS, "")
  call expect(kmoe_quantize_fp8(int(E, c_int64_t), int(H, c_int64_t), int(F, c_int64_t), &
              c_loc(down), c_loc(down8), c_loc(down_s)), KMOE_SUCCESS, "")
  config%dtype = KMOE_FP8
  call expect(kmoe_layer_create_fp8(config, c_loc(router), c_null_ptr, c_loc(gate8), &
              c_loc(gate_s), c_loc(up8), c_loc(up_s), c_loc(down8), c_loc(down_s), fp8_layer), &
              KMOE_SUCCESS, "")
  x16 = int(z'3f80', c_int16_t)  ! bf16 1.0
  call expect(kmoe_forward(fp8_layer, c_loc(x16), c_loc(out16), int(T, c_int64_t)), &
              KMOE_SUCCESS, "")
  ! Uniform positive weights and inputs: every output the same, positive.
  if (any(out16 /= out16(1, 1)) .or. out16(1, 1) <= 0) then
    write (*, '(a)') 'FAILED: fp8 layer outputs differ or are not positive'
    failures = failures + 1
  end if
  call kmoe_layer_destroy(fp8_layer)
  call expect(kmoe_finalize(), KMOE_SUCCESS, "")

  if (failures == 0) then
    write (*, '(a)') 'Fortran wrapper error paths: PASSED'
  else
    write (*, '(a)') 'Fortran wrapper error paths: FAILED'
    error stop 1
  end if

contains

  subroutine expect(status, want, fragment)
    integer(c_int), intent(in) :: status, want
    character(len=*), intent(in) :: fragment
    character(len=:), allocatable :: message
    message = kmoe_error_message()
    if (status /= want .or. index(message, fragment) == 0) then
      write (*, '(a, i0, 3a, i0, 3a)') 'FAILED: status ', status, ' "', message, &
        '", expected ', want, ' with "', fragment, '"'
      failures = failures + 1
    end if
  end subroutine

end program
