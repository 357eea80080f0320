! SPDX-License-Identifier: BSD-3-Clause
! Error paths of the Fortran wrapper: arrays of the wrong shape, too few
! tokens, a second create and 16-bit storage are refused with a status and
! a message before any call into C (which sees only addresses).
program kokkos_moe_fortran_errors
  use, intrinsic :: iso_c_binding
  use kokkos_moe
  implicit none
  integer, parameter :: E = 4, K = 2, H = 8, F = 6, T = 3
  real(c_float) :: router(H, E), gate(H, F, E), up(H, F, E), down(F, H, E)
  real(c_float) :: x(H, T), out(H, T), small(H, 2), transposed(T, H), weights(K, T)
  integer(c_int32_t) :: ids(K, T)
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
