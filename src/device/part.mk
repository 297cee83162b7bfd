# Device side: the cpu engine (into libnkv.a), GPU compile proofs, tests.
LIBNKV_SRCS += src/device/cpu/engine.c src/device/cpu/fiber.c
HIP_SRCS += src/device/wave_kernels_hip.cpp
CUDA_SRCS += src/device/wave_kernels_cuda.cu
