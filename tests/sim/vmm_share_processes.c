/* Two processes share device memory through the VMM API, as programs that
 * split work across processes do: the parent exports an allocation as a
 * POSIX file descriptor and sends it over a Unix socket (SCM_RIGHTS) to a
 * child it starts; the child imports it, maps it, checks the parent's bytes
 * and writes its own, which the parent then reads through its mapping.
 * Exit status 0 when both sides saw the other's data. */
#include <cuda.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WORDS 1024u

static int failed(const char *what, CUresult result)
{
    const char *name = "?";
    cuGetErrorName(result, &name);
    fprintf(stderr, "vmm_share_processes: %s: %s\n", what, name);
    return 1;
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult result_ = (call);                                                                 \
        if (result_ != CUDA_SUCCESS)                                                               \
            return failed(#call, result_);                                                         \
    } while (0)

static int send_descriptor(int socket, int descriptor)
{
    char byte = 'd';
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    char control[CMSG_SPACE(sizeof(int))];
    memset(control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    return sendmsg(socket, &message, 0) == 1 ? 0 : -1;
}

static int receive_descriptor(int socket)
{
    char byte;
    struct iovec data = {.iov_base = &byte, .iov_len = 1};
    char control[CMSG_SPACE(sizeof(int))];
    struct msghdr message = {.msg_iov = &data, .msg_iovlen = 1, .msg_control = control,
                             .msg_controllen = sizeof control};
    if (recvmsg(socket, &message, 0) != 1)
        return -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (header == NULL || header->cmsg_type != SCM_RIGHTS)
        return -1;
    int descriptor;
    memcpy(&descriptor, CMSG_DATA(header), sizeof(int));
    return descriptor;
}

/* Maps `handle` (`size` bytes) readable and writable by device 0. */
static CUresult map(CUmemGenericAllocationHandle handle, size_t size, CUdeviceptr *address)
{
    CUresult result = cuMemAddressReserve(address, size, 0, 0, 0);
    if (result == CUDA_SUCCESS)
        result = cuMemMap(*address, size, 0, handle, 0);
    CUmemAccessDesc access = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                              .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if (result == CUDA_SUCCESS)
        result = cuMemSetAccess(*address, size, &access, 1);
    return result;
}

static int start(CUcontext *context)
{
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(context, 0));
    CHECK(cuCtxSetCurrent(*context));
    return 0;
}

static int check_words(const unsigned *words, unsigned expected, const char *side)
{
    for (unsigned i = 0; i < WORDS; i++) {
        if (words[i] != expected) {
            fprintf(stderr, "vmm_share_processes: %s sees word %u = %#x, expected %#x\n", side, i,
                    words[i], expected);
            return 1;
        }
    }
    return 0;
}

static int child(int socket, size_t size)
{
    CUcontext context;
    if (start(&context) != 0)
        return 1;
    int descriptor = receive_descriptor(socket);
    if (descriptor < 0) {
        fprintf(stderr, "vmm_share_processes: no descriptor received\n");
        return 1;
    }
    CUmemGenericAllocationHandle handle;
    CHECK(cuMemImportFromShareableHandle(&handle, (void *)(intptr_t)descriptor,
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(descriptor);
    CUdeviceptr address;
    CHECK(map(handle, size, &address));
    unsigned words[WORDS];
    CHECK(cuMemcpyDtoH(words, address, sizeof words));
    if (check_words(words, 0x11111111u, "the child") != 0)
        return 1;
    CHECK(cuMemsetD32(address, 0x22222222u, WORDS));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemUnmap(address, size));
    CHECK(cuMemRelease(handle));
    CHECK(cuMemAddressFree(address, size));
    char done = 'k';
    return write(socket, &done, 1) == 1 ? 0 : 1;
}

static int parent(const char *self)
{
    CUcontext context;
    if (start(&context) != 0)
        return 1;
    CUmemAllocationProp properties = {
        .type = CU_MEM_ALLOCATION_TYPE_PINNED,
        .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
    };
    size_t size;
    CHECK(cuMemGetAllocationGranularity(&size, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle handle;
    CHECK(cuMemCreate(&handle, size, &properties, 0));
    CUdeviceptr address;
    CHECK(map(handle, size, &address));
    CHECK(cuMemsetD32(address, 0x11111111u, WORDS));
    CHECK(cuCtxSynchronize());
    int descriptor;
    CHECK(cuMemExportToShareableHandle(&descriptor, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                       0));
    int sockets[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0) {
        perror("vmm_share_processes: socketpair");
        return 1;
    }
    char socket_text[16], size_text[32];
    snprintf(socket_text, sizeof socket_text, "%d", sockets[1]);
    snprintf(size_text, sizeof size_text, "%zu", size);
    char *arguments[] = {(char *)self, "child", socket_text, size_text, NULL};
    pid_t pid;
    int spawned = posix_spawn(&pid, self, NULL, NULL, arguments, environ);
    if (spawned != 0) {
        fprintf(stderr, "vmm_share_processes: cannot start the child: %s\n", strerror(spawned));
        return 1;
    }
    close(sockets[1]);
    if (send_descriptor(sockets[0], descriptor) != 0) {
        perror("vmm_share_processes: sendmsg");
        return 1;
    }
    close(descriptor);
    char done = 0;
    ssize_t got = read(sockets[0], &done, 1);
    int status = 0;
    waitpid(pid, &status, 0);
    if (got != 1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "vmm_share_processes: the child failed (status %d)\n", status);
        return 1;
    }
    unsigned words[WORDS];
    CHECK(cuMemcpyDtoH(words, address, sizeof words));
    if (check_words(words, 0x22222222u, "the parent") != 0)
        return 1;
    CHECK(cuMemUnmap(address, size));
    CHECK(cuMemRelease(handle));
    CHECK(cuMemAddressFree(address, size));
    printf("vmm_share_processes: both processes saw the other's writes\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "child") == 0)
        return child(atoi(argv[2]), strtoull(argv[3], NULL, 10));
    return parent(argv[0]);
}
