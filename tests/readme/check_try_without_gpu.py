#!/usr/bin/env python3
"""The README's "Try it without a GPU" section, followed literally.

Takes the section's shell block and its "By hand:" command from README.md as
they are written, and runs them in a scratch folder whose `build` is this
build and whose my_program.cu / my_program.c are small CUDA programs of the
kind the section means (a kernel; host code on the runtime API). Every
command must succeed. Then the section's warning is checked too: a program
linked with nvcc's default static runtime fails on the simulated device with
one line saying to rebuild with -cudart shared.
usage: check_try_without_gpu.py README BUILD_DIR CUDA_ROOT"""
import os
import re
import subprocess
import sys
import tempfile

readme, build, cuda_root = sys.argv[1:4]

KERNEL_PROGRAM = r"""
#include <cstdio>
__global__ void scale(int *data, int n, int factor)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = i * factor;
}
int main()
{
    const int n = 1000;
    int *device = nullptr, host[n];
    if (cudaMalloc(&device, n * sizeof(int)) != cudaSuccess)
        return 1;
    scale<<<(n + 127) / 128, 128>>>(device, n, 3);
    if (cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 1;
    long long sum = 0;
    for (int i = 0; i < n; i++)
        sum += host[i];
    printf("sum %lld\n", sum);
    cudaFree(device);
    return sum == 3LL * n * (n - 1) / 2 ? 0 : 1;
}
"""

HOST_PROGRAM = r"""
#include <cuda_runtime_api.h>
#include <stdio.h>
int main(void)
{
    unsigned char *device = NULL, host[4096];
    for (int round = 0; round < 20; round++) {
        if (cudaMalloc((void **)&device, sizeof host) != cudaSuccess)
            return 1;
        cudaMemset(device, round, sizeof host);
        cudaMemcpy(host, device, sizeof host, cudaMemcpyDeviceToHost);
        cudaFree(device);
        if (host[4095] != round)
            return 1;
    }
    printf("20 rounds\n");
    return 0;
}
"""


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


text = open(readme).read()
section = re.search(r"^## Try it without a GPU\n(.*?)(?=^## )", text, re.S | re.M)
if not section:
    fail("README.md has no 'Try it without a GPU' section")
section = section.group(1)
block = re.search(r"```sh\n(.*?)```", section, re.S)
if not block:
    fail("the section has no sh block")
# A backslash at the end of a line continues the command, as in the shell.
commands = [c.strip() for c in block.group(1).replace("\\\n", " ").splitlines() if c.strip()]
by_hand = re.search(r"By hand:\s*`([^`]+)`", section)
if not by_hand:
    fail("the section has no 'By hand:' command")
commands.append(by_hand.group(1))

work = tempfile.mkdtemp(prefix="gpucache-readme-")
os.symlink(os.path.abspath(build), os.path.join(work, "build"))
open(os.path.join(work, "my_program.cu"), "w").write(KERNEL_PROGRAM)
open(os.path.join(work, "my_program.c"), "w").write(HOST_PROGRAM)
env = dict(os.environ)
env["PATH"] = os.path.join(cuda_root, "bin") + os.pathsep + env.get("PATH", "")
for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "GPUCACHE_ALLOC_CONF"):
    env.pop(name, None)


def run(command):
    # The README names the toolkit at /usr/local/cuda; a build configured
    # with another -Dcuda-root reads it from there.
    command = command.replace("/usr/local/cuda", cuda_root)
    return subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)


# The .cu program is built first, the .c one replaces it: the commands after
# the compile lines run whichever my_program the README built last, so the
# kernel program is also run on its own here, before the host program
# replaces it.
for command in commands:
    done = run(command)
    if done.returncode != 0:
        fail(f"'{command}' exited {done.returncode}\n{done.stdout}{done.stderr}")
    print(f"ok: {command.split('#')[0].strip()}")
    if command.startswith("nvcc "):
        kernel = run("LD_LIBRARY_PATH=build/sim:build/sim/runtime ./my_program")
        if kernel.returncode != 0 or "sum 1498500" not in kernel.stdout:
            fail(f"the kernel program: exit {kernel.returncode}\n{kernel.stdout}{kernel.stderr}")
        kernel = run("build/tools/gpucache check --sim -- ./my_program")
        if kernel.returncode != 0:
            fail(f"check of the kernel program: exit {kernel.returncode}\n{kernel.stdout}")
        print("ok: the kernel program runs, alone and under gpucache check --sim")

# The warning: nvcc's default static runtime cannot reach the simulated driver.
done = run("nvcc -o static_program my_program.cu && "
           "LD_LIBRARY_PATH=build/sim:build/sim/runtime ./static_program")
if done.returncode == 0:
    fail("a program on nvcc's static runtime ran on the simulated device")
lines = [line for line in done.stderr.splitlines() if "-cudart shared" in line]
if len(lines) != 1:
    fail(f"no single line saying to rebuild with -cudart shared:\n{done.stderr}")
print("ok: the static runtime fails with one line: " + lines[0])
