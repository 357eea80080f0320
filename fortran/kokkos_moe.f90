! SPDX-License-Identifier: BSD-3-Clause
! Fortran interface of KokkosMoE: iso_c_binding declarations of the C API
! (include/KokkosMoE/kokkos_moe.h) and a small wrapper type, kmoe_layer_t.
!
! Arrays are host arrays. A C row-major [T, H] array is a Fortran array
! x(H, T): declare hidden states and outputs as x(H, T), gate and up as
! gate(H, F, E), down as down(F, H, E), the router as router(H, E), routing
! ids and weights as ids(k, T), weights(k, T). Expert ids are 0-based.
! 16-bit storage (KMOE_FP16, KMOE_BF16) is passed as integer(c_int16_t) bit
! patterns; KMOE_FP32 as real(c_float). KMOE_FP8 layers (e4m3 expert
! weights as integer(c_int8_t) codes with real(c_float) block scales, made
! by kmoe_quantize_fp8; bf16 hidden states) come from kmoe_layer_create_fp8:
! gate_scale(ceil(H/128), ceil(F/128), E), down_scale(ceil(F/128), ceil(H/128), E).
module kokkos_moe
  use, intrinsic :: iso_c_binding
  implicit none
  private

  ! kmoe_status
  integer(c_int), parameter, public :: KMOE_SUCCESS = 0, KMOE_ERROR_INVALID_ARGUMENT = 1, &
    KMOE_ERROR_NOT_INITIALIZED = 2, KMOE_ERROR_OUT_OF_MEMORY = 3, KMOE_ERROR_STATE = 4, &
    KMOE_ERROR_INTERNAL = 5
  ! kmoe_dtype
  integer(c_int32_t), parameter, public :: KMOE_FP32 = 0, KMOE_FP16 = 1, KMOE_BF16 = 2, &
    KMOE_FP8 = 3
  ! kmoe_routing
  integer(c_int32_t), parameter, public :: KMOE_ROUTING_SOFTMAX_TOPK = 0, &
    KMOE_ROUTING_SIGMOID_GROUP_TOPK = 1, KMOE_ROUTING_EXTERNAL = 2

  ! struct kmoe_config
  type, bind(c), public :: kmoe_config
    integer(c_int32_t) :: num_experts, top_k
    integer(c_int64_t) :: hidden_size, ffn_size, max_tokens
    integer(c_int32_t) :: routing, renormalize, n_group, topk_group
    real(c_float) :: routed_scaling
    integer(c_int32_t) :: dtype, batch_invariant
  end type kmoe_config

  public :: kmoe_config_init, kmoe_initialize, kmoe_finalize, kmoe_layer_create, &
    kmoe_layer_destroy, kmoe_forward, kmoe_forward_routed, kmoe_error_message, &
    kmoe_quantize_fp8, kmoe_layer_create_fp8

  interface
    subroutine kmoe_config_init(config) bind(c, name="kmoe_config_init")
      import :: kmoe_config
      type(kmoe_config), intent(out) :: config
    end subroutine
    function kmoe_initialize(argc, argv) bind(c, name="kmoe_initialize") result(status)
      import :: c_int, c_ptr
      integer(c_int), value :: argc
      type(c_ptr), value :: argv
      integer(c_int) :: status
    end function
    function kmoe_finalize() bind(c, name="kmoe_finalize") result(status)
      import :: c_int
      integer(c_int) :: status
    end function
    function kmoe_layer_create(config, router, bias, gate, up, down, layer) &
        bind(c, name="kmoe_layer_create") result(status)
      import :: c_int, c_ptr, kmoe_config
      type(kmoe_config), intent(in) :: config
      type(c_ptr), value :: router, bias, gate, up, down
      type(c_ptr), intent(out) :: layer
      integer(c_int) :: status
    end function
    ! count matrices [rows, cols] (C order: a Fortran w(cols, rows, count))
    ! to e4m3 codes q and scales(ceil(cols/128), ceil(rows/128), count).
    function kmoe_quantize_fp8(count, rows, cols, w, q, scales) &
        bind(c, name="kmoe_quantize_fp8") result(status)
      import :: c_int, c_ptr, c_int64_t
      integer(c_int64_t), value :: count, rows, cols
      type(c_ptr), value :: w, q, scales
      integer(c_int) :: status
    end function
    function kmoe_layer_create_fp8(config, router, bias, gate, gate_scale, up, up_scale, down, &
        down_scale, layer) bind(c, name="kmoe_layer_create_fp8") result(status)
      import :: c_int, c_ptr, kmoe_config
      type(kmoe_config), intent(in) :: config
      type(c_ptr), value :: router, bias, gate, gate_scale, up, up_scale, down, down_scale
      type(c_ptr), intent(out) :: layer
      integer(c_int) :: status
    end function
    subroutine kmoe_layer_destroy(layer) bind(c, name="kmoe_layer_destroy")
      import :: c_ptr
      type(c_ptr), value :: layer
    end subroutine
    function kmoe_forward(layer, x, out, num_tokens) bind(c, name="kmoe_forward") result(status)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: layer, x, out
      integer(c_int64_t), value :: num_tokens
      integer(c_int) :: status
    end function
    function kmoe_forward_routed(layer, x, ids, weights, out, num_tokens) &
        bind(c, name="kmoe_forward_routed") result(status)
      import :: c_int, c_ptr, c_int64_t
      type(c_ptr), value :: layer, x, ids, weights, out
      integer(c_int64_t), value :: num_tokens
      integer(c_int) :: status
    end function
    function kmoe_last_error() bind(c, name="kmoe_last_error") result(message)
      import :: c_ptr
      type(c_ptr) :: message
    end function
    subroutine kmoe_set_last_error(message) bind(c, name="kmoe_set_last_error")
      import :: c_char
      character(kind=c_char), intent(in) :: message(*)
    end subroutine
    function c_strlen(s) bind(c, name="strlen") result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

  ! A layer with fp32 storage and the arrays laid out as above. Every
  ! procedure returns a kmoe_status; kmoe_error_message() explains a failure.
  ! The arrays' shapes are checked against the layer's sizes before any call
  ! into C, which sees only their addresses.
  type, public :: kmoe_layer_t
    type(c_ptr) :: handle = c_null_ptr
    type(kmoe_config) :: config
  contains
    procedure :: create => layer_create
    procedure :: forward => layer_forward
    procedure :: forward_routed => layer_forward_routed
    procedure :: destroy => layer_destroy
  end type kmoe_layer_t

contains

  ! The message of the last failed call on this thread.
  function kmoe_error_message() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: i, n
    p = kmoe_last_error()
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: message)
    do i = 1, n
      message(i:i) = chars(i)
    end do
  end function

  ! status = KMOE_ERROR_INVALID_ARGUMENT with message, for an argument the
  ! C side cannot check.
  integer(c_int) function refuse(message) result(status)
    character(len=*), intent(in) :: message
    call kmoe_set_last_error(message // c_null_char)
    status = KMOE_ERROR_INVALID_ARGUMENT
  end function

  ! Whether array `a`'s shape is `want`; a message naming it when not.
  logical function shape_is(a_shape, want, name, message)
    integer, intent(in) :: a_shape(:)
    integer(c_int64_t), intent(in) :: want(:)
    character(len=*), intent(in) :: name
    character(len=:), allocatable, intent(inout) :: message
    character(len=160) :: line
    shape_is = all(int(a_shape, c_int64_t) == want)
    if (.not. shape_is) then
      write(line, '(a, " has shape (", *(i0, :, ", "))') name, a_shape
      message = trim(line) // "), expected (" // join(want) // ")"
    end if
  end function

  function join(values) result(text)
    integer(c_int64_t), intent(in) :: values(:)
    character(len=:), allocatable :: text
    character(len=24) :: item
    integer :: i
    text = ""
    do i = 1, size(values)
      write(item, '(i0)') values(i)
      text = text // trim(item)
      if (i < size(values)) text = text // ", "
    end do
  end function

  ! Token arrays hold `rows` values per token and at least num_tokens tokens.
  logical function tokens_fit(a_shape, rows, num_tokens, name, message)
    integer, intent(in) :: a_shape(2)
    integer(c_int64_t), intent(in) :: rows
    integer, intent(in) :: num_tokens
    character(len=*), intent(in) :: name
    character(len=:), allocatable, intent(inout) :: message
    tokens_fit = shape_is([a_shape(1)], [rows], name // "'s first extent", message)
    if (tokens_fit .and. a_shape(2) < num_tokens) then
      tokens_fit = .false.
      message = name // " holds fewer than num_tokens tokens (its second extent)"
    end if
  end function

  integer(c_int) function layer_create(self, config, router, gate, up, down, bias) result(status)
    class(kmoe_layer_t), intent(inout) :: self
    type(kmoe_config), intent(in) :: config
    real(c_float), intent(in), target, contiguous :: router(:, :), gate(:, :, :), up(:, :, :), &
      down(:, :, :)
    real(c_float), intent(in), target, contiguous, optional :: bias(:)
    type(c_ptr) :: bias_ptr
    character(len=:), allocatable :: message
    integer(c_int64_t) :: E, H, F
    logical :: ok
    if (c_associated(self%handle)) then
      call kmoe_set_last_error("kmoe_layer_t%create: the layer exists; destroy it first" // &
                               c_null_char)
      status = KMOE_ERROR_STATE
      return
    end if
    if (config%dtype /= KMOE_FP32) then
      status = refuse("kmoe_layer_t%create: fp32 storage only; 16-bit: call kmoe_layer_create")
      return
    end if
    E = config%num_experts
    H = config%hidden_size
    F = config%ffn_size
    message = ""
    ok = shape_is(shape(router), [H, E], "router", message)
    ok = shape_is(shape(gate), [H, F, E], "gate", message) .and. ok
    ok = shape_is(shape(up), [H, F, E], "up", message) .and. ok
    ok = shape_is(shape(down), [F, H, E], "down", message) .and. ok
    bias_ptr = c_null_ptr
    if (present(bias)) then
      bias_ptr = c_loc(bias)
      ok = shape_is(shape(bias), [E], "bias", message) .and. ok
    end if
    if (.not. ok) then
      status = refuse("kmoe_layer_t%create: " // message)
      return
    end if
    status = kmoe_layer_create(config, c_loc(router), bias_ptr, c_loc(gate), c_loc(up), &
                               c_loc(down), self%handle)
    if (status == KMOE_SUCCESS) self%config = config
  end function

  integer(c_int) function layer_forward(self, x, out, num_tokens) result(status)
    class(kmoe_layer_t), intent(inout) :: self
    real(c_float), intent(in), target, contiguous :: x(:, :)
    real(c_float), intent(inout), target, contiguous :: out(:, :)
    integer, intent(in) :: num_tokens
    character(len=:), allocatable :: message
    message = ""
    if (c_associated(self%handle)) then
      if (.not. (tokens_fit(shape(x), self%config%hidden_size, num_tokens, "x", message) .and. &
                 tokens_fit(shape(out), self%config%hidden_size, num_tokens, "out", message))) then
        status = refuse("kmoe_layer_t%forward: " // message)
        return
      end if
    end if
    status = kmoe_forward(self%handle, c_loc(x), c_loc(out), int(num_tokens, c_int64_t))
  end function

  integer(c_int) function layer_forward_routed(self, x, ids, weights, out, num_tokens) &
      result(status)
    class(kmoe_layer_t), intent(inout) :: self
    real(c_float), intent(in), target, contiguous :: x(:, :), weights(:, :)
    integer(c_int32_t), intent(in), target, contiguous :: ids(:, :)
    real(c_float), intent(inout), target, contiguous :: out(:, :)
    integer, intent(in) :: num_tokens
    character(len=:), allocatable :: message
    integer(c_int64_t) :: H, k
    message = ""
    if (c_associated(self%handle)) then
      H = self%config%hidden_size
      k = self%config%top_k
      if (.not. (tokens_fit(shape(x), H, num_tokens, "x", message) .and. &
                 tokens_fit(shape(out), H, num_tokens, "out", message) .and. &
                 tokens_fit(shape(ids), k, num_tokens, "ids", message) .and. &
                 tokens_fit(shape(weights), k, num_tokens, "weights", message))) then
        status = refuse("kmoe_layer_t%forward_routed: " // message)
        return
      end if
    end if
    status = kmoe_forward_routed(self%handle, c_loc(x), c_loc(ids), c_loc(weights), c_loc(out), &
                                 int(num_tokens, c_int64_t))
  end function

  subroutine layer_destroy(self)
    class(kmoe_layer_t), intent(inout) :: self
    call kmoe_layer_destroy(self%handle)
    self%handle = c_null_ptr
  end subroutine

end module kokkos_moe
