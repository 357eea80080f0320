// SPDX-License-Identifier: BSD-3-Clause
// CUDA's fragments, shapes and crossovers (KokkosMoE_Fragment.hpp includes
// this file after the templates they specialise): mma.sync, then what
// sm_90a builds replace with wgmma and e4m3 wgmma.
#ifndef KOKKOSMOE_CUDA_FRAGMENTS_HPP
#define KOKKOSMOE_CUDA_FRAGMENTS_HPP

#include "cuda/KokkosMoE_Cuda_Fragment.hpp"
#include "cuda/KokkosMoE_Cuda_Wgmma_Fragment.hpp"
#include "cuda/KokkosMoE_Cuda_E4m3Fragment.hpp"

#endif
