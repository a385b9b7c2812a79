/* Symbolizing return addresses at write time with elfutils' libdwfl: the
 * function (C++ names demangled by libstdc++ where it is installed), the
 * source file and line from DWARF, and `module+0xoffset` for code without
 * symbols. Each address is looked up once per symbolizer. */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucache_stacks.h"

struct cached_frame {
    uintptr_t address; /* 0: empty slot */
    struct gpucache_frame frame;
};

struct gpucache_symbolizer {
    Dwfl *dwfl;
    struct cached_frame *slots;
    size_t slot_count; /* a power of two */
    size_t used;
    /* libstdc++'s __cxa_demangle, which the library does not link: the
     * program's own when it carries libstdc++, else opened at the first
     * mangled name (a C++ program may link it only as needed, and drop it);
     * then kept loaded, since libstdc++ cannot be unloaded safely. */
    char *(*demangle)(const char *, char *, size_t *, int *);
    bool demangler_looked_up;
};

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

struct gpucache_symbolizer *gpucache_symbolizer_create(void)
{
    struct gpucache_symbolizer *symbolizer = calloc(1, sizeof *symbolizer);
    if (!symbolizer)
        return NULL;
    symbolizer->dwfl = dwfl_begin(&callbacks);
    symbolizer->slot_count = 1024;
    symbolizer->slots = calloc(symbolizer->slot_count, sizeof *symbolizer->slots);
    if (!symbolizer->dwfl || !symbolizer->slots ||
        dwfl_linux_proc_report(symbolizer->dwfl, getpid()) != 0 ||
        dwfl_report_end(symbolizer->dwfl, NULL, NULL) != 0) {
        gpucache_symbolizer_destroy(symbolizer);
        return NULL;
    }
    return symbolizer;
}

/* Looked up once, when the first mangled name needs it. */
static void find_demangler(struct gpucache_symbolizer *symbolizer)
{
    symbolizer->demangler_looked_up = true;
    *(void **)&symbolizer->demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (symbolizer->demangle)
        return;
    void *libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (libstdcxx)
        *(void **)&symbolizer->demangle = dlsym(libstdcxx, "__cxa_demangle");
}

static void free_frame(struct gpucache_frame *frame)
{
    free((char *)frame->name);
    free((char *)frame->filename);
}

void gpucache_symbolizer_destroy(struct gpucache_symbolizer *symbolizer)
{
    if (!symbolizer)
        return;
    for (size_t index = 0; symbolizer->slots && index < symbolizer->slot_count; index++)
        if (symbolizer->slots[index].address)
            free_frame(&symbolizer->slots[index].frame);
    free(symbolizer->slots);
    if (symbolizer->dwfl)
        dwfl_end(symbolizer->dwfl);
    free(symbolizer);
}

static char *copy(const char *text)
{
    return strdup(text ? text : "");
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : (path ? path : "?");
}

/* Only code of a function the DWARF describes has lines: for code outside
 * every function (crt1's _start), the line table's nearest row belongs to
 * other code. */
static bool inside_described_function(Dwfl_Module *module, Dwarf_Addr pc)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *unit = dwfl_module_addrdie(module, pc, &bias);
    if (!unit)
        return false;
    Dwarf_Die *scopes = NULL;
    int count = dwarf_getscopes(unit, pc - bias, &scopes);
    bool inside = false;
    for (int index = 0; index < count && !inside; index++) {
        int tag = dwarf_tag(&scopes[index]);
        inside = tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
    }
    free(scopes);
    return inside;
}

/* `address` is a return address: the call is the byte before it, which is
 * where the source line of the call is found. */
static void look_up(struct gpucache_symbolizer *symbolizer, uintptr_t address,
                    struct gpucache_frame *frame)
{
    Dwarf_Addr pc = (Dwarf_Addr)address - 1;
    Dwfl_Module *module = dwfl_addrmodule(symbolizer->dwfl, pc);
    const char *module_path = NULL;
    Dwarf_Addr start = 0;
    if (module)
        dwfl_module_info(module, NULL, &start, NULL, NULL, NULL, &module_path, NULL);
    const char *symbol = module ? dwfl_module_addrname(module, pc) : NULL;
    char *demangled = NULL;
    bool mangled = symbol && symbol[0] == '_' && symbol[1] == 'Z';
    if (mangled && !symbolizer->demangler_looked_up)
        find_demangler(symbolizer);
    if (mangled && symbolizer->demangle) {
        int status = -1;
        demangled = symbolizer->demangle(symbol, NULL, NULL, &status);
        if (status != 0) {
            free(demangled);
            demangled = NULL;
        }
    }
    if (symbol) {
        /* "__libc_start_main@@GLIBC_2.34": the version is not the name. */
        const char *version = demangled ? NULL : strchr(symbol, '@');
        frame->name = demangled ? demangled
                      : version ? strndup(symbol, (size_t)(version - symbol))
                                : copy(symbol);
    } else {
        char text[256];
        snprintf(text, sizeof text, "%s+0x%" PRIx64, base_name(module_path),
                 (uint64_t)(address - start));
        frame->name = copy(text);
    }
    int line = 0;
    const char *file = NULL;
    Dwfl_Line *source = module && inside_described_function(module, pc)
                            ? dwfl_module_getsrc(module, pc)
                            : NULL;
    if (source)
        file = dwfl_lineinfo(source, NULL, &line, NULL, NULL, NULL);
    frame->filename = copy(file ? file : module_path ? module_path : "??");
    frame->line = file && line > 0 ? (unsigned)line : 0;
}

static bool grow(struct gpucache_symbolizer *symbolizer)
{
    size_t slot_count = symbolizer->slot_count * 2;
    struct cached_frame *slots = calloc(slot_count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t index = 0; index < symbolizer->slot_count; index++) {
        struct cached_frame *old = &symbolizer->slots[index];
        if (!old->address)
            continue;
        size_t slot = (old->address >> 4) & (slot_count - 1);
        while (slots[slot].address)
            slot = (slot + 1) & (slot_count - 1);
        slots[slot] = *old;
    }
    free(symbolizer->slots);
    symbolizer->slots = slots;
    symbolizer->slot_count = slot_count;
    return true;
}

const struct gpucache_frame *gpucache_symbolize(struct gpucache_symbolizer *symbolizer,
                                               uintptr_t address)
{
    static const struct gpucache_frame unknown = {"??", "??", 0};
    if (!symbolizer || address == 0)
        return &unknown;
    if (2 * (symbolizer->used + 1) > symbolizer->slot_count && !grow(symbolizer))
        return &unknown;
    size_t mask = symbolizer->slot_count - 1;
    size_t slot = (address >> 4) & mask;
    while (symbolizer->slots[slot].address && symbolizer->slots[slot].address != address)
        slot = (slot + 1) & mask;
    struct cached_frame *cached = &symbolizer->slots[slot];
    if (!cached->address) {
        look_up(symbolizer, address, &cached->frame);
        if (!cached->frame.name || !cached->frame.filename) {
            free_frame(&cached->frame);
            return &unknown;
        }
        cached->address = address;
        symbolizer->used++;
    }
    return &cached->frame;
}
