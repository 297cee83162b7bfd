# Device side: the cpu engine (into libnkv.a), GPU compile proofs.
LIBNKV_SRCS += src/device/cpu/engine.c src/device/cpu/fiber.c src/device/cpu/ctx_switch.c
HIP_SRCS += src/device/wave_kernels_hip.cpp
CUDA_SRCS += src/device/wave_kernels_cuda.cu
