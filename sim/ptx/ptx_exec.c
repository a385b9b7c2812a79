/* The interpreter: runs one CTA of a decoded kernel on the calling thread.
 *
 * Each warp keeps one program counter per lane and executes the lanes that
 * sit at the lowest counter among those that can run; divergent paths
 * therefore reconverge at the first instruction they share, whatever the
 * control flow. Lanes that move together keep a single warp counter, and the
 * per-lane counters are only consulted again after a divergent branch, a
 * barrier or an exit, so straight-line code costs one dispatch per warp
 * instruction plus a loop over the lanes.
 *
 * Warps of a CTA take turns in slices; a barrier releases its waiting
 * threads once every live thread of the CTA (or the count it names) has
 * arrived. A fault stops the CTA and is reported to the grid, which then
 * stops too.
 *
 * One file because every opcode's case reads the same lane and warp state
 * inside one dispatch loop, which the compiler keeps fast only when it sees
 * all of it. */
#include <fenv.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptx_cta.h"

#define SLICE_INSTRUCTIONS 4096
#define MAX_BARRIERS 16
/* Backward branches a group of lanes may take while other lanes of its warp
 * wait, before those others get to run (see run_warp). */
#define SPIN_LIMIT 64

struct warp {
    uint64_t *r;        /* register_count * 32 values */
    uint32_t pc[PTX_WARP_SIZE];
    uint8_t barrier[PTX_WARP_SIZE];
    uint8_t carry[PTX_WARP_SIZE];
    uint32_t exists;    /* lanes that are threads of the CTA */
    uint32_t exited;
    uint32_t blocked;   /* waiting at a barrier */
    uint32_t active;    /* lanes at current_pc, running now; 0: choose again */
    uint32_t current_pc;
    uint32_t other_min; /* lowest pc among runnable lanes not in active */
    unsigned index;
    unsigned backward_branches; /* taken while other lanes waited */
    bool forced; /* running a group other than the lowest-pc one */
    /* Device-function calls: per lane, the return pc and call site of each
     * active call; lanes_in_calls counts lanes with depth > 0. */
    uint8_t depth[PTX_WARP_SIZE];
    struct {
        uint32_t return_pc;
        uint32_t site;
    } frames[PTX_WARP_SIZE][PTX_MAX_CALL_DEPTH];
    unsigned lanes_in_calls;
};

struct cta {
    const struct ptx_function *function;
    struct ptx_launch *launch;
    struct ptx_cta_memory *memory;
    unsigned ctaid[3];
    unsigned thread_count;
    unsigned warp_count;
    unsigned live_threads;
    unsigned char *shared;
    size_t shared_bytes;
    unsigned char *local;
    size_t local_bytes;
    unsigned char *call_params;
    unsigned worker;
    struct warp *warps;
    unsigned arrived[MAX_BARRIERS];
    unsigned expected[MAX_BARRIERS]; /* 0: every live thread */
    /* bar.red: arrived threads whose predicate held, and where the result
     * goes (the destination slot of the reducing instruction). */
    unsigned true_count[MAX_BARRIERS];
    uint8_t reduction[MAX_BARRIERS];
    uint32_t result_slot[MAX_BARRIERS];
    enum ptx_status status;
    unsigned long long instructions;
    /* Global extents found accessible, most recent first in no particular
     * order: kernels touch few buffers, so most checks end here. */
    struct {
        uintptr_t start, end;
    } extents[4];
    unsigned next_extent;
};

atomic_ullong ptx_executed_thread_instructions;

unsigned long long ptx_thread_instructions(void)
{
    return atomic_load(&ptx_executed_thread_instructions);
}

/* ---- faults ------------------------------------------------------------- */

static void fault(struct cta *cta, enum ptx_status status, const struct ptx_instruction *instruction,
                  const char *format, ...) __attribute__((format(printf, 4, 5)));

static void fault(struct cta *cta, enum ptx_status status, const struct ptx_instruction *instruction,
                  const char *format, ...)
{
    if (cta->status != PTX_OK)
        return;
    cta->status = status;
    char detail[160];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(detail, sizeof detail, format, arguments);
    va_end(arguments);
    ptx_grid_report(cta->launch, status, "kernel %s, block (%u,%u,%u), PTX line %u: %s",
                    cta->function->name, cta->ctaid[0], cta->ctaid[1], cta->ctaid[2],
                    instruction != NULL ? instruction->line : 0, detail);
}

/* ---- value helpers ------------------------------------------------------ */

static inline unsigned type_bits(uint8_t type)
{
    switch (type) {
    case T_B8: case T_U8: case T_S8: return 8;
    case T_B16: case T_U16: case T_S16: case T_F16: case T_BF16: return 16;
    case T_B64: case T_U64: case T_S64: case T_F64: return 64;
    case T_PRED: return 1;
    default: return 32;
    }
}

static inline bool type_signed(uint8_t type)
{
    return type == T_S8 || type == T_S16 || type == T_S32 || type == T_S64;
}

static inline bool type_float(uint8_t type)
{
    return type == T_F32 || type == T_F64 || type == T_F16 || type == T_BF16 || type == T_F16X2 ||
           type == T_BF16X2;
}

static inline uint64_t width_mask(unsigned bits)
{
    return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

static inline int64_t sign_extend(uint64_t value, unsigned bits)
{
    if (bits >= 64)
        return (int64_t)value;
    unsigned shift = 64 - bits;
    return (int64_t)(value << shift) >> shift;
}

static inline float as_f32(uint64_t bits)
{
    uint32_t low = (uint32_t)bits;
    float value;
    memcpy(&value, &low, 4);
    return value;
}

static inline uint64_t from_f32(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    return bits;
}

static inline double as_f64(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, 8);
    return value;
}

static inline uint64_t from_f64(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, 8);
    return bits;
}

static inline float flush_f32(float value)
{
    return fpclassify(value) == FP_SUBNORMAL ? copysignf(0.0f, value) : value;
}

static float half_to_float(uint16_t half)
{
    uint32_t sign = (uint32_t)(half >> 15) << 31;
    int exponent = (half >> 10) & 0x1f;
    uint32_t mantissa = half & 0x3ff;
    uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) {
        if (mantissa == 0) {
            bits = sign;
        } else {
            float value = ldexpf((float)mantissa, -24);
            return sign ? -value : value;
        }
    } else {
        bits = sign | ((uint32_t)(exponent - 15 + 127) << 23) | (mantissa << 13);
    }
    float value;
    memcpy(&value, &bits, 4);
    return value;
}

/* Round-to-nearest-even conversion to IEEE binary16. */
static uint16_t float_to_half(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
    if (isnan(value))
        return sign | 0x7e00;
    float magnitude = fabsf(value);
    if (magnitude >= 65520.0f)
        return sign | 0x7c00;
    if (magnitude < 0x1p-14f) {
        /* Subnormal: the value in units of 2^-24, rounded to even. */
        float scaled = magnitude * 0x1p24f;
        return sign | (uint16_t)nearbyintf(scaled);
    }
    int exponent;
    float fraction = frexpf(magnitude, &exponent); /* [0.5, 1) */
    float scaled = nearbyintf(fraction * 2048.0f); /* 11 bits */
    if (scaled >= 2048.0f) {
        scaled /= 2.0f;
        exponent++;
    }
    uint16_t mantissa = (uint16_t)((uint32_t)scaled & 0x3ff);
    return sign | (uint16_t)((exponent - 1 + 15) << 10) | mantissa;
}

static inline float bf16_to_float(uint16_t value)
{
    return as_f32((uint64_t)value << 16);
}

static uint16_t float_to_bf16(float value)
{
    uint32_t bits = (uint32_t)from_f32(value);
    if (isnan(value))
        return (uint16_t)((bits >> 16) | 0x40);
    uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
    return (uint16_t)((bits + rounding) >> 16);
}

/* ---- half precision (f16, bf16 and their x2 pairs) ------------------------ */

static inline bool is_half_type(uint8_t type)
{
    return type == T_F16 || type == T_F16X2 || type == T_BF16 || type == T_BF16X2;
}

/* One element of a half-precision operation, computed in float and rounded
 * once to the half format: float carries more than twice the precision of
 * either half format plus two bits, so the double rounding of +, -, *, /
 * cannot differ from a direct one; the fma goes through double. */
static uint16_t half_element(uint8_t op, bool brain, bool saturate, uint16_t a, uint16_t b, uint16_t c)
{
    float x = brain ? bf16_to_float(a) : half_to_float(a);
    float y = brain ? bf16_to_float(b) : half_to_float(b);
    float z = brain ? bf16_to_float(c) : half_to_float(c);
    float result;
    switch (op) {
    case OP_ADD: result = x + y; break;
    case OP_SUB: result = x - y; break;
    case OP_MUL: result = x * y; break;
    case OP_DIV: result = x / y; break;
    case OP_MIN: result = fminf(x, y); break;
    case OP_MAX: result = fmaxf(x, y); break;
    default: result = (float)fma((double)x, (double)y, (double)z); break; /* fma, mad */
    }
    if (saturate)
        result = isnan(result) ? 0.0f : fminf(fmaxf(result, 0.0f), 1.0f);
    return brain ? float_to_bf16(result) : float_to_half(result);
}

/* add/sub/mul/fma/min/max on f16, bf16, f16x2 and bf16x2 (each 16-bit half
 * of a pair on its own), round to nearest even only. */
static bool half_operation(const struct ptx_instruction *in, uint8_t op, uint64_t a, uint64_t b, uint64_t c,
                           uint64_t *result)
{
    if (in->rounding != RND_DEFAULT && in->rounding != RND_RN)
        return false;
    bool brain = in->type == T_BF16 || in->type == T_BF16X2;
    unsigned elements = in->type == T_F16X2 || in->type == T_BF16X2 ? 2 : 1;
    uint64_t value = 0;
    for (unsigned e = 0; e < elements; e++)
        value |= (uint64_t)half_element(op, brain, (in->flags & F_SAT) != 0, (uint16_t)(a >> (16 * e)),
                                        (uint16_t)(b >> (16 * e)), (uint16_t)(c >> (16 * e)))
                 << (16 * e);
    *result = value;
    return true;
}

static int set_rounding(uint8_t rounding)
{
    switch (rounding) {
    case RND_RZ: case RND_RZI: return fesetround(FE_TOWARDZERO);
    case RND_RM: case RND_RMI: return fesetround(FE_DOWNWARD);
    case RND_RP: case RND_RPI: return fesetround(FE_UPWARD);
    default: return 0;
    }
}

static inline bool needs_rounding_mode(uint8_t rounding)
{
    return rounding == RND_RZ || rounding == RND_RM || rounding == RND_RP;
}

/* Switches the host's rounding mode only for the directed modes; the
 * default (round to nearest even) is the host's own. */
#define ROUNDING_BEGIN(rounding)                                                                   \
    int previous_rounding_ = 0;                                                                    \
    bool switched_rounding_ = needs_rounding_mode(rounding);                                       \
    if (switched_rounding_) {                                                                      \
        previous_rounding_ = fegetround();                                                         \
        set_rounding(rounding);                                                                    \
    }
#define ROUNDING_END()                                                                             \
    if (switched_rounding_)                                                                        \
    fesetround(previous_rounding_)

/* ---- operands ----------------------------------------------------------- */

#define LANES(mask) for (uint32_t m_ = (mask), l = 0; m_ != 0 && ((l = (uint32_t)__builtin_ctz(m_)), 1); m_ &= m_ - 1)
#define REG(slot) (r + (size_t)(slot) * PTX_WARP_SIZE)

static inline uint64_t value_of(const struct ptx_operand *operand, const uint64_t *r, unsigned lane)
{
    return operand->kind == K_REG ? r[(size_t)operand->reg * PTX_WARP_SIZE + lane] : (uint64_t)operand->imm;
}

static inline bool predicate_of(const struct ptx_operand *operand, const uint64_t *r, unsigned lane)
{
    return ((value_of(operand, r, lane) & 1) != 0) != (operand->negate != 0);
}

/* ---- memory ------------------------------------------------------------- */

static bool global_accessible_slow(struct cta *cta, uintptr_t address, size_t size)
{
    uintptr_t start, end;
    if (address + size < address || !cta->launch->is_accessible(address, size, &start, &end))
        return false;
    cta->extents[cta->next_extent].start = start;
    cta->extents[cta->next_extent].end = end;
    cta->next_extent = (cta->next_extent + 1) % 4;
    return true;
}

static inline bool global_accessible(struct cta *cta, uintptr_t address, size_t size)
{
    for (unsigned i = 0; i < 4; i++)
        if (address >= cta->extents[i].start && address + size <= cta->extents[i].end)
            return true;
    return global_accessible_slow(cta, address, size);
}

static inline unsigned popcount32(uint32_t value)
{
    value = value - ((value >> 1) & 0x55555555u);
    value = (value & 0x33333333u) + ((value >> 2) & 0x33333333u);
    return (((value + (value >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24;
}

/* A host pointer for an access of `size` bytes at the address operand in
 * `lane`, after checking it lies inside memory the thread may touch; NULL
 * (and the CTA faults) otherwise. */
static unsigned char *resolve_address(struct cta *cta, const struct warp *warp,
                                      const struct ptx_instruction *instruction, uint8_t space,
                                      const struct ptx_operand *operand, unsigned lane, size_t size,
                                      enum ptx_access access)
{
    bool write = access != PTX_ACCESS_LOAD;
    const uint64_t *r = warp->r;
    uint64_t address = (operand->reg == PTX_NO_REGISTER ? 0 : r[(size_t)operand->reg * PTX_WARP_SIZE + lane]) +
                       (uint64_t)operand->imm;
    unsigned thread = warp->index * PTX_WARP_SIZE + lane;
    if (size > 1 && (address & (size - 1)) != 0 && (size & (size - 1)) == 0) {
        fault(cta, PTX_MISALIGNED, instruction, "misaligned %zu-byte access at 0x%llx", size,
              (unsigned long long)address);
        return NULL;
    }
    switch (space) {
    case S_SHARED:
        if (address + size > cta->shared_bytes || address + size < address)
            break;
        return cta->shared + address;
    case S_LOCAL:
        if (address + size > cta->local_bytes || address + size < address)
            break;
        return cta->local + (size_t)thread * cta->local_bytes + address;
    case S_PARAM:
        if (write || address + size > cta->function->param_bytes)
            break;
        return (unsigned char *)cta->launch->params + address;
    case S_CALL_PARAM:
        if (address + size > cta->function->call_param_bytes)
            break;
        return cta->call_params + (size_t)thread * cta->function->call_param_bytes + address;
    default: {
        uintptr_t host = (uintptr_t)address;
        /* A generic address may point into this CTA's shared or local
         * memory (cvta made it from a state-space address). */
        if (host >= (uintptr_t)cta->shared && host + size <= (uintptr_t)cta->shared + cta->shared_bytes)
            return (unsigned char *)host;
        /* cvta.param made it from a kernel parameter: read-only. */
        uintptr_t params = (uintptr_t)cta->launch->params;
        if (!write && host >= params && host + size <= params + cta->function->param_bytes)
            return (unsigned char *)host;
        uintptr_t local_start = (uintptr_t)cta->local;
        uintptr_t local_end = local_start + (size_t)cta->thread_count * cta->local_bytes;
        if (host >= local_start && host + size <= local_end && cta->local_bytes > 0)
            return (unsigned char *)host;
        if (space == S_CONST && write)
            break;
        if (!global_accessible(cta, host, size))
            break;
        /* Where the race detector can observe a kernel's global loads and
         * stores: every global, constant and generic-to-global access of
         * every thread passes here with its address, size and direction. */
        if (cta->launch->observe_access != NULL)
            cta->launch->observe_access(cta->launch->observer_context, cta->worker, host, size, access);
        return (unsigned char *)host;
    }
    }
    fault(cta, PTX_ILLEGAL_ADDRESS, instruction, "illegal %s of %zu bytes at 0x%llx (%s space)",
          write ? "store" : "load", size, (unsigned long long)address,
          space == S_SHARED ? "shared" : space == S_LOCAL ? "local" : space == S_PARAM ? "param"
          : space == S_CALL_PARAM ? "call param" : space == S_CONST ? "const" : "global");
    return NULL;
}

static inline uint64_t load_value(const unsigned char *pointer, uint8_t type)
{
    switch (type_bits(type)) {
    case 8: {
        uint8_t value = *pointer;
        return type_signed(type) ? (uint64_t)(int64_t)(int8_t)value : value;
    }
    case 16: {
        uint16_t value;
        memcpy(&value, pointer, 2);
        return type_signed(type) ? (uint64_t)(int64_t)(int16_t)value : value;
    }
    case 64: {
        uint64_t value;
        memcpy(&value, pointer, 8);
        return value;
    }
    default: {
        uint32_t value;
        memcpy(&value, pointer, 4);
        return type_signed(type) ? (uint64_t)(int64_t)(int32_t)value : value;
    }
    }
}

static inline void store_value(unsigned char *pointer, uint8_t type, uint64_t value)
{
    switch (type_bits(type)) {
    case 8: *pointer = (uint8_t)value; break;
    case 16: { uint16_t v = (uint16_t)value; memcpy(pointer, &v, 2); break; }
    case 64: memcpy(pointer, &value, 8); break;
    default: { uint32_t v = (uint32_t)value; memcpy(pointer, &v, 4); break; }
    }
}

/* ---- warps -------------------------------------------------------------- */

/* Chooses the lanes to run next: the runnable lanes at the lowest pc above
 * `floor` (UINT32_MAX: at the lowest pc). False when no lane can run. */
static bool schedule_above(struct warp *warp, uint32_t floor);

static bool schedule(struct warp *warp)
{
    warp->forced = false;
    return schedule_above(warp, UINT32_MAX);
}

/* A lane's position for scheduling while some lanes are inside device
 * functions: its call sites from the outermost, then its pc, compared
 * lexicographically, so lanes inside a call run before the lanes waiting
 * after it and all meet again at the return. */
static uint64_t call_position(const struct warp *warp, unsigned lane)
{
    uint64_t position = 0;
    unsigned level = 0;
    for (; level < warp->depth[lane]; level++)
        position |= (uint64_t)(warp->frames[lane][level].return_pc) << (48 - 16 * level);
    return position | (uint64_t)(warp->pc[lane] + 1) << (48 - 16 * level);
}

static bool schedule_in_calls(struct warp *warp, uint32_t runnable)
{
    uint64_t lowest = UINT64_MAX;
    LANES(runnable) {
        uint64_t position = call_position(warp, l);
        if (position < lowest)
            lowest = position;
    }
    uint32_t active = 0;
    LANES(runnable)
        if (call_position(warp, l) == lowest)
            active |= 1u << l;
    warp->active = active;
    warp->current_pc = warp->pc[__builtin_ctz(active)];
    /* Choose again after every instruction while calls are active. */
    warp->other_min = 0;
    return true;
}

static bool schedule_above(struct warp *warp, uint32_t floor)
{
    uint32_t runnable = warp->exists & ~warp->exited & ~warp->blocked;
    if (warp->active != 0) {
        LANES(warp->active)
            warp->pc[l] = warp->current_pc;
        warp->active = 0;
    }
    if (runnable == 0)
        return false;
    if (warp->lanes_in_calls > 0)
        return schedule_in_calls(warp, runnable);
    uint32_t lowest = UINT32_MAX;
    LANES(runnable)
        if (warp->pc[l] < lowest && (floor == UINT32_MAX || warp->pc[l] > floor))
            lowest = warp->pc[l];
    if (lowest == UINT32_MAX)
        return schedule_above(warp, UINT32_MAX);
    uint32_t active = 0, other = UINT32_MAX;
    LANES(runnable) {
        if (warp->pc[l] == lowest)
            active |= 1u << l;
        else if (warp->pc[l] < other)
            other = warp->pc[l];
    }
    warp->active = active;
    warp->current_pc = lowest;
    warp->other_min = other;
    return true;
}

/* Stops the active lanes in place, so the next schedule() sees every lane. */
static void settle(struct warp *warp)
{
    LANES(warp->active)
        warp->pc[l] = warp->current_pc;
    warp->active = 0;
}

static void release_barriers(struct cta *cta, bool *released)
{
    for (unsigned id = 0; id < MAX_BARRIERS; id++) {
        if (cta->arrived[id] == 0)
            continue;
        unsigned expected = cta->expected[id] ? cta->expected[id] : cta->live_threads;
        if (cta->arrived[id] < expected)
            continue;
        unsigned arrived = cta->arrived[id], true_count = cta->true_count[id];
        uint8_t reduction = cta->reduction[id];
        uint64_t result = reduction == BAR_RED_POPC  ? true_count
                          : reduction == BAR_RED_AND ? true_count == arrived
                                                     : true_count != 0;
        cta->arrived[id] = 0;
        cta->expected[id] = 0;
        cta->true_count[id] = 0;
        cta->reduction[id] = BAR_PLAIN;
        for (unsigned w = 0; w < cta->warp_count; w++) {
            struct warp *warp = &cta->warps[w];
            uint32_t waking = 0;
            LANES(warp->blocked)
                if (warp->barrier[l] == id)
                    waking |= 1u << l;
            if (waking == 0)
                continue;
            if (reduction != BAR_PLAIN) {
                uint64_t *destination = warp->r + (size_t)cta->result_slot[id] * PTX_WARP_SIZE;
                LANES(waking)
                    destination[l] = result;
            }
            if (warp->active != 0)
                settle(warp);
            warp->blocked &= ~waking;
        }
        *released = true;
    }
}

/* ---- instruction groups ------------------------------------------------- */

static uint64_t integer_binary(uint8_t op, uint8_t type, uint8_t mode, uint64_t a, uint64_t b, bool *divide_by_zero)
{
    unsigned bits = type_bits(type);
    bool is_signed = type_signed(type);
    uint64_t mask = width_mask(bits);
    switch (op) {
    case OP_ADD: return (a + b) & mask;
    case OP_SUB: return (a - b) & mask;
    case OP_MUL:
        if (mode == MUL_WIDE) {
            if (is_signed)
                return (uint64_t)(sign_extend(a, bits) * sign_extend(b, bits)) & width_mask(bits * 2);
            return ((a & mask) * (b & mask)) & width_mask(bits * 2);
        }
        if (mode == MUL_HI) {
            if (bits == 64) {
                if (is_signed)
                    return (uint64_t)(((__int128)(int64_t)a * (__int128)(int64_t)b) >> 64);
                return (uint64_t)(((unsigned __int128)a * b) >> 64);
            }
            if (is_signed)
                return (uint64_t)((sign_extend(a, bits) * sign_extend(b, bits)) >> bits) & mask;
            return (((a & mask) * (b & mask)) >> bits) & mask;
        }
        return (a * b) & mask;
    case OP_DIV:
        if ((b & mask) == 0) {
            *divide_by_zero = true;
            return mask;
        }
        if (is_signed) {
            int64_t x = sign_extend(a, bits), y = sign_extend(b, bits);
            if (y == -1)
                return (uint64_t)(-(uint64_t)x) & mask;
            return (uint64_t)(x / y) & mask;
        }
        return ((a & mask) / (b & mask)) & mask;
    case OP_REM:
        if ((b & mask) == 0) {
            *divide_by_zero = true;
            return a & mask;
        }
        if (is_signed) {
            int64_t x = sign_extend(a, bits), y = sign_extend(b, bits);
            if (y == -1)
                return 0;
            return (uint64_t)(x % y) & mask;
        }
        return ((a & mask) % (b & mask)) & mask;
    case OP_MIN:
        if (is_signed)
            return (sign_extend(a, bits) < sign_extend(b, bits) ? a : b) & mask;
        return ((a & mask) < (b & mask) ? a : b) & mask;
    case OP_MAX:
        if (is_signed)
            return (sign_extend(a, bits) > sign_extend(b, bits) ? a : b) & mask;
        return ((a & mask) > (b & mask) ? a : b) & mask;
    case OP_AND: return a & b & mask;
    case OP_OR: return (a | b) & mask;
    case OP_XOR: return (a ^ b) & mask;
    case OP_SHL: return (b & 0xffffffffu) >= bits ? 0 : (a << (b & 0xffffffffu)) & mask;
    case OP_SHR: {
        uint64_t amount = b & 0xffffffffu;
        if (is_signed) {
            int64_t x = sign_extend(a, bits);
            return (uint64_t)(x >> (amount >= bits ? bits - 1 : amount)) & mask;
        }
        return amount >= bits ? 0 : ((a & mask) >> amount);
    }
    default:
        return 0;
    }
}

static bool compare_integer(uint8_t mode, uint8_t type, uint64_t a, uint64_t b)
{
    unsigned bits = type_bits(type);
    if (type_signed(type) && mode != CMP_LO && mode != CMP_LS && mode != CMP_HI && mode != CMP_HS) {
        int64_t x = sign_extend(a, bits), y = sign_extend(b, bits);
        switch (mode) {
        case CMP_EQ: return x == y;
        case CMP_NE: return x != y;
        case CMP_LT: return x < y;
        case CMP_LE: return x <= y;
        case CMP_GT: return x > y;
        case CMP_GE: return x >= y;
        default: return false;
        }
    }
    uint64_t mask = width_mask(bits);
    uint64_t x = a & mask, y = b & mask;
    switch (mode) {
    case CMP_EQ: return x == y;
    case CMP_NE: return x != y;
    case CMP_LT: case CMP_LO: return x < y;
    case CMP_LE: case CMP_LS: return x <= y;
    case CMP_GT: case CMP_HI: return x > y;
    case CMP_GE: case CMP_HS: return x >= y;
    default: return false;
    }
}

static bool compare_float(uint8_t mode, double x, double y)
{
    bool unordered = isnan(x) || isnan(y);
    switch (mode) {
    case CMP_EQ: return !unordered && x == y;
    case CMP_NE: return !unordered && x != y;
    case CMP_LT: return !unordered && x < y;
    case CMP_LE: return !unordered && x <= y;
    case CMP_GT: return !unordered && x > y;
    case CMP_GE: return !unordered && x >= y;
    case CMP_EQU: return unordered || x == y;
    case CMP_NEU: return unordered || x != y;
    case CMP_LTU: return unordered || x < y;
    case CMP_LEU: return unordered || x <= y;
    case CMP_GTU: return unordered || x > y;
    case CMP_GEU: return unordered || x >= y;
    case CMP_NUM: return !unordered;
    case CMP_NAN: return unordered;
    default: return false;
    }
}

static double read_float(uint64_t bits, uint8_t type)
{
    switch (type) {
    case T_F64: return as_f64(bits);
    case T_F16: return half_to_float((uint16_t)bits);
    case T_BF16: return bf16_to_float((uint16_t)bits);
    default: return as_f32(bits);
    }
}

static double round_integral(double value, uint8_t rounding)
{
    switch (rounding) {
    case RND_RZI: return trunc(value);
    case RND_RMI: return floor(value);
    case RND_RPI: return ceil(value);
    default: return nearbyint(value); /* .rni, and the default of float->int */
    }
}

/* cvt: every integer and float pairing, with PTX's saturation (float to
 * integer clamps to the destination range, NaN gives 0). */
static uint64_t convert(const struct ptx_instruction *instruction, uint64_t value)
{
    uint8_t to = instruction->type, from = instruction->type2;
    unsigned to_bits = type_bits(to), from_bits = type_bits(from);
    bool saturate = (instruction->flags & F_SAT) != 0;
    if (!type_float(to) && !type_float(from)) {
        if (saturate) {
            int64_t minimum, maximum;
            if (type_signed(to)) {
                minimum = to_bits == 64 ? INT64_MIN : -(int64_t)(1ull << (to_bits - 1));
                maximum = to_bits == 64 ? INT64_MAX : (int64_t)((1ull << (to_bits - 1)) - 1);
            } else {
                minimum = 0;
                maximum = to_bits == 64 ? INT64_MAX : (int64_t)((1ull << to_bits) - 1);
            }
            if (type_signed(from)) {
                int64_t source = sign_extend(value, from_bits);
                if (source < minimum)
                    source = minimum;
                if (source > maximum && !(to_bits == 64 && !type_signed(to)))
                    source = maximum;
                if (type_signed(to) && to_bits < 32)
                    return (uint64_t)source & 0xffffffffu;
                return (uint64_t)source & width_mask(to_bits);
            }
            uint64_t source = value & width_mask(from_bits);
            if (!(to_bits == 64 && !type_signed(to)) && source > (uint64_t)maximum)
                source = (uint64_t)maximum;
            return source & width_mask(to_bits);
        }
        uint64_t source = type_signed(from) ? (uint64_t)sign_extend(value, from_bits) : value & width_mask(from_bits);
        /* A signed destination narrower than 32 bits is kept sign-extended
         * in the register, as the hardware's sign-extending moves do. */
        if (type_signed(to) && to_bits < 32)
            return (uint64_t)sign_extend(source, to_bits) & 0xffffffffu;
        return source & width_mask(to_bits);
    }
    if (type_float(from) && !type_float(to)) {
        double source = read_float(value, from);
        if (isnan(source))
            return 0;
        double rounded = round_integral(source, instruction->rounding);
        if (type_signed(to)) {
            double minimum = -ldexp(1.0, (int)to_bits - 1), maximum = ldexp(1.0, (int)to_bits - 1);
            if (rounded < minimum)
                return (uint64_t)(to_bits == 64 ? INT64_MIN : (int64_t)minimum) & width_mask(to_bits);
            if (rounded >= maximum)
                return (uint64_t)(to_bits == 64 ? INT64_MAX : (int64_t)maximum - 1) & width_mask(to_bits);
            int64_t result = (int64_t)rounded;
            if (to_bits < 32)
                return (uint64_t)result & 0xffffffffu;
            return (uint64_t)result & width_mask(to_bits);
        }
        double maximum = ldexp(1.0, (int)to_bits);
        if (rounded <= 0)
            return 0;
        if (rounded >= maximum)
            return width_mask(to_bits);
        return (uint64_t)rounded;
    }
    int previous = 0;
    if (needs_rounding_mode(instruction->rounding)) {
        previous = fegetround();
        set_rounding(instruction->rounding);
    }
    uint64_t result;
    if (!type_float(from)) {
        /* Integer to float, rounded in the current mode. */
        if (to == T_F64)
            result = type_signed(from) ? from_f64((double)sign_extend(value, from_bits))
                                       : from_f64((double)(value & width_mask(from_bits)));
        else {
            float converted = type_signed(from) ? (float)sign_extend(value, from_bits)
                                                : (float)(value & width_mask(from_bits));
            result = to == T_F16 ? float_to_half(converted) : to == T_BF16 ? float_to_bf16(converted) : from_f32(converted);
        }
    } else {
        /* Float to float. */
        double source = read_float(value, from);
        bool integral = instruction->rounding >= RND_RNI;
        if (integral)
            source = round_integral(source, instruction->rounding);
        if (saturate) {
            if (isnan(source))
                source = 0;
            source = source < 0 ? 0 : source > 1 ? 1 : source;
        }
        if (to == T_F64) {
            result = from_f64(source);
        } else if (to == T_F32) {
            float narrowed = from == T_F64 ? (float)source : (float)source;
            if (instruction->flags & F_FTZ)
                narrowed = flush_f32(narrowed);
            result = from_f32(narrowed);
        } else if (to == T_F16) {
            result = float_to_half((float)source);
        } else {
            result = float_to_bf16((float)source);
        }
    }
    if (needs_rounding_mode(instruction->rounding))
        fesetround(previous);
    return result;
}

/* atom and red: read-modify-write of one value, atomically with respect to
 * every other host thread (other CTAs run concurrently). */
static bool atomic_update(unsigned char *pointer, uint8_t type, uint8_t mode, uint64_t b, uint64_t c,
                          uint64_t *old_out)
{
    unsigned bits = type_bits(type);
    if (bits == 32) {
        uint32_t *word = (uint32_t *)pointer;
        uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED), desired;
        do {
            switch (mode) {
            case ATOM_ADD:
                desired = type == T_F32 ? (uint32_t)from_f32(as_f32(old) + as_f32(b)) : old + (uint32_t)b;
                break;
            case ATOM_MIN:
                desired = type == T_S32 ? ((int32_t)old < (int32_t)b ? old : (uint32_t)b)
                        : type == T_F32 ? (uint32_t)from_f32(fminf(as_f32(old), as_f32(b)))
                                        : (old < (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_MAX:
                desired = type == T_S32 ? ((int32_t)old > (int32_t)b ? old : (uint32_t)b)
                        : type == T_F32 ? (uint32_t)from_f32(fmaxf(as_f32(old), as_f32(b)))
                                        : (old > (uint32_t)b ? old : (uint32_t)b);
                break;
            case ATOM_INC: desired = old >= (uint32_t)b ? 0 : old + 1; break;
            case ATOM_DEC: desired = (old == 0 || old > (uint32_t)b) ? (uint32_t)b : old - 1; break;
            case ATOM_CAS: desired = old == (uint32_t)b ? (uint32_t)c : old; break;
            case ATOM_EXCH: desired = (uint32_t)b; break;
            case ATOM_AND: desired = old & (uint32_t)b; break;
            case ATOM_OR: desired = old | (uint32_t)b; break;
            case ATOM_XOR: desired = old ^ (uint32_t)b; break;
            default: return false;
            }
        } while (!__atomic_compare_exchange_n(word, &old, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
        *old_out = old;
        return true;
    }
    if (bits == 64) {
        uint64_t *word = (uint64_t *)pointer;
        uint64_t old = __atomic_load_n(word, __ATOMIC_RELAXED), desired;
        do {
            switch (mode) {
            case ATOM_ADD: desired = type == T_F64 ? from_f64(as_f64(old) + as_f64(b)) : old + b; break;
            case ATOM_MIN:
                desired = type == T_S64 ? ((int64_t)old < (int64_t)b ? old : b)
                        : type == T_F64 ? from_f64(fmin(as_f64(old), as_f64(b))) : (old < b ? old : b);
                break;
            case ATOM_MAX:
                desired = type == T_S64 ? ((int64_t)old > (int64_t)b ? old : b)
                        : type == T_F64 ? from_f64(fmax(as_f64(old), as_f64(b))) : (old > b ? old : b);
                break;
            case ATOM_INC: desired = old >= b ? 0 : old + 1; break;
            case ATOM_DEC: desired = (old == 0 || old > b) ? b : old - 1; break;
            case ATOM_CAS: desired = old == b ? c : old; break;
            case ATOM_EXCH: desired = b; break;
            case ATOM_AND: desired = old & b; break;
            case ATOM_OR: desired = old | b; break;
            case ATOM_XOR: desired = old ^ b; break;
            default: return false;
            }
        } while (!__atomic_compare_exchange_n(word, &old, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
        *old_out = old;
        return true;
    }
    return false;
}

static uint64_t clock_value(uint8_t mode)
{
    struct timespec now;
    clock_gettime(mode == CLOCK_32 || mode == CLOCK_64 ? CLOCK_MONOTONIC : CLOCK_REALTIME, &now);
    uint64_t nanoseconds = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    switch (mode) {
    case CLOCK_32: case CLOCK_GLOBALTIMER_LO: return nanoseconds & 0xffffffffu;
    case CLOCK_GLOBALTIMER_HI: return nanoseconds >> 32;
    default: return nanoseconds;
    }
}

static uint64_t special_value(const struct cta *cta, const struct warp *warp, uint8_t special, unsigned lane)
{
    const struct ptx_launch *launch = cta->launch;
    unsigned thread = warp->index * PTX_WARP_SIZE + lane;
    unsigned bx = launch->block[0], by = launch->block[1];
    switch (special) {
    case SR_TID_X: return thread % bx;
    case SR_TID_Y: return (thread / bx) % by;
    case SR_TID_Z: return thread / (bx * by);
    case SR_NTID_X: return launch->block[0];
    case SR_NTID_Y: return launch->block[1];
    case SR_NTID_Z: return launch->block[2];
    case SR_CTAID_X: return cta->ctaid[0];
    case SR_CTAID_Y: return cta->ctaid[1];
    case SR_CTAID_Z: return cta->ctaid[2];
    case SR_NCTAID_X: return launch->grid[0];
    case SR_NCTAID_Y: return launch->grid[1];
    case SR_NCTAID_Z: return launch->grid[2];
    case SR_LANEID: return lane;
    case SR_WARPID: return warp->index;
    case SR_NWARPID: return 64;
    case SR_SMID: return launch->sm_count ? cta->worker % launch->sm_count : 0;
    case SR_NSMID: return launch->sm_count;
    case SR_GRIDID: return 1;
    case SR_LANEMASK_EQ: return 1u << lane;
    case SR_LANEMASK_LT: return (1u << lane) - 1;
    case SR_LANEMASK_LE: return (uint32_t)((2ull << lane) - 1);
    case SR_LANEMASK_GT: return (uint32_t)~((2ull << lane) - 1);
    case SR_LANEMASK_GE: return ~((1u << lane) - 1);
    case SR_DYNAMIC_SMEM_SIZE: return launch->dynamic_shared_bytes;
    case SR_TOTAL_SMEM_SIZE: return cta->shared_bytes;
    case SR_CLUSTERID_X: return cta->ctaid[0];
    case SR_CLUSTER_NCTAID_X: case SR_CLUSTER_NCTARANK: return 1;
    case SR_GRID_WORKSPACE_HIGH: return (uint32_t)(launch->grid_workspace >> 32);
    case SR_GRID_WORKSPACE_LOW: return (uint32_t)launch->grid_workspace;
    default: return 0;
    }
}

/* ---- fused multiply-add -------------------------------------------------- */

/* fma.rn.f32 for every lane with the host's FMA instruction when it has one
 * (one rounding, exactly PTX's result); fmaf() would be a library call per
 * lane. */
__attribute__((target("fma"))) static void fma_f32_with_instruction(uint32_t exec, uint64_t *d, const uint64_t *r,
                                                                     const struct ptx_operand *o)
{
    LANES(exec)
        d[l] = from_f32(__builtin_fmaf(as_f32(value_of(&o[1], r, l)), as_f32(value_of(&o[2], r, l)),
                                       as_f32(value_of(&o[3], r, l))));
}

static bool host_has_fma(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return known == 1;
}

/* ---- the interpreter loop ----------------------------------------------- */

/* Runs the warp for up to `budget` instructions or until it cannot go on. */
static void run_warp(struct cta *cta, struct warp *warp, unsigned budget)
{
    const struct ptx_function *function = cta->function;
    const struct ptx_instruction *code = function->code;
    uint64_t *r = warp->r;
    unsigned long long executed = 0;
    while (budget-- > 0 && cta->status == PTX_OK) {
        if (warp->active == 0 && !schedule(warp))
            break;
        if (warp->current_pc >= function->code_count) {
            /* Falling off the end of a kernel is an exit. */
            cta->live_threads -= popcount32(warp->active);
            warp->exited |= warp->active;
            warp->active = 0;
            continue;
        }
        const struct ptx_instruction *in = &code[warp->current_pc];
        if (warp->forced && (in->op == OP_BRA || in->op == OP_RET || in->op == OP_EXIT || in->op == OP_BAR ||
                             in->op == OP_BAR_WARP || in->op == OP_SHFL || in->op == OP_VOTE ||
                             in->op == OP_MATCH || in->op == OP_ACTIVEMASK)) {
            /* A group run out of turn goes only as far as its next branch
             * or warp-wide operation, where the lowest pc leads again. */
            schedule(warp);
            continue;
        }
        uint32_t mask = warp->active;
        uint32_t exec = mask;
        if (in->guard != PTX_NO_REGISTER) {
            const uint64_t *guard = REG(in->guard);
            uint32_t selected = 0;
            bool negate = (in->flags & F_NEG_GUARD) != 0;
            LANES(mask)
                if (((guard[l] & 1) != 0) != negate)
                    selected |= 1u << l;
            exec = selected;
        }
        executed += popcount32(exec);
        const struct ptx_operand *o = in->o;
        uint8_t type = in->type;
        unsigned bits = type_bits(type);
        uint64_t mask_bits = width_mask(bits);
        uint64_t *d = o[0].kind == K_REG ? REG(o[0].reg) : NULL;

        switch (in->op) {
        case OP_NOP:
        case OP_BAR_WARP:
            break;
        case OP_MOV:
            if (o[0].kind == K_VEC) {
                /* Unpack: mov.b64 {lo, hi}, %rd */
                unsigned part = bits / o[0].count;
                LANES(exec) {
                    uint64_t value = value_of(&o[1], r, l);
                    for (unsigned e = 0; e < o[0].count; e++)
                        REG(o[0].vec[e])[l] = (value >> (e * part)) & width_mask(part);
                }
            } else if (o[1].kind == K_VEC) {
                unsigned part = bits / o[1].count;
                LANES(exec) {
                    uint64_t value = 0;
                    for (unsigned e = 0; e < o[1].count; e++)
                        value |= (REG(o[1].vec[e])[l] & width_mask(part)) << (e * part);
                    d[l] = value;
                }
            } else if (type == T_PRED) {
                LANES(exec) d[l] = predicate_of(&o[1], r, l);
            } else {
                LANES(exec) d[l] = value_of(&o[1], r, l) & mask_bits;
            }
            break;
        case OP_CLOCK: {
            uint64_t now = clock_value(in->mode);
            LANES(exec) d[l] = now & mask_bits;
            break;
        }
        case OP_LD: case OP_ST: {
            size_t element = bits / 8;
            unsigned count = in->vector;
            bool store = in->op == OP_ST;
            const struct ptx_operand *address = store ? &o[0] : &o[1];
            const struct ptx_operand *data = store ? &o[1] : &o[0];
            uint32_t remaining = exec;
            if (!store && in->space == S_PARAM && address->reg == PTX_NO_REGISTER && count == 1 &&
                data->kind == K_REG && exec != 0) {
                /* ld.param of a kernel parameter: one value for every lane. */
                unsigned char *pointer = resolve_address(cta, warp, in, S_PARAM, address, __builtin_ctz(exec),
                                                         element, PTX_ACCESS_LOAD);
                if (pointer == NULL)
                    break;
                uint64_t value = load_value(pointer, type);
                if (type_signed(type) && bits < 32)
                    value &= 0xffffffffu;
                LANES(exec) d[l] = value;
                break;
            }
            /* Fast paths for the common scalar 32- and 64-bit accesses to
             * shared and global memory through a register: a lane that
             * does not fit them (out of bounds, misaligned, another
             * window) is left to the general path below, which faults or
             * handles it. */
            if (count == 1 && address->reg != PTX_NO_REGISTER && data->kind != K_VEC &&
                (bits == 32 || bits == 64) && (in->space == S_SHARED || in->space == S_GLOBAL)) {
                const uint64_t *base = REG(address->reg);
                uint64_t offset = (uint64_t)address->imm;
                bool shared = in->space == S_SHARED;
                bool observed = cta->launch->observe_access != NULL;
                if (shared && !store && bits == 32 && !type_signed(type)) {
                    /* ld.shared.{u,b,f}32: the inner loop of tiled kernels. */
                    size_t limit = cta->shared_bytes;
                    const unsigned char *shared_memory = cta->shared;
                    LANES(exec) {
                        uint64_t where = base[l] + offset;
                        if ((where & 3) != 0 || where + 4 > limit)
                            break;
                        uint32_t word;
                        memcpy(&word, shared_memory + where, 4);
                        d[l] = word;
                        remaining &= remaining - 1;
                    }
                    exec = 0; /* the general loop below takes what is left */
                }
                LANES(exec) {
                    uint64_t where = base[l] + offset;
                    unsigned char *pointer;
                    if ((where & (element - 1)) != 0)
                        break;
                    if (shared) {
                        if (where + element > cta->shared_bytes)
                            break;
                        pointer = cta->shared + where;
                    } else {
                        if (observed || !global_accessible(cta, (uintptr_t)where, element))
                            break;
                        pointer = (unsigned char *)(uintptr_t)where;
                    }
                    if (bits == 32) {
                        uint32_t word;
                        if (store) {
                            word = (uint32_t)value_of(data, r, l);
                            memcpy(pointer, &word, 4);
                        } else {
                            memcpy(&word, pointer, 4);
                            d[l] = type_signed(type) ? (uint64_t)(int64_t)(int32_t)word : word;
                        }
                    } else if (store) {
                        uint64_t word = value_of(data, r, l);
                        memcpy(pointer, &word, 8);
                    } else {
                        memcpy(&d[l], pointer, 8);
                    }
                    remaining &= remaining - 1;
                }
            }
            LANES(remaining) {
                unsigned char *pointer = resolve_address(cta, warp, in, in->space, address, l,
                                                         element * count,
                                                         store ? PTX_ACCESS_STORE : PTX_ACCESS_LOAD);
                if (pointer == NULL)
                    break;
                if (data->kind == K_VEC) {
                    for (unsigned e = 0; e < data->count; e++) {
                        if (store)
                            store_value(pointer + e * element, type, REG(data->vec[e])[l]);
                        else
                            REG(data->vec[e])[l] = load_value(pointer + e * element, type) &
                                                   (type_signed(type) && bits < 32 ? 0xffffffffu : ~0ull);
                    }
                } else if (store) {
                    store_value(pointer, type, value_of(data, r, l));
                } else {
                    uint64_t value = load_value(pointer, type);
                    /* Sign-extended narrow loads fill a 32-bit register. */
                    d[l] = type_signed(type) && bits < 32 ? value & 0xffffffffu : value;
                }
            }
            break;
        }
        case OP_CVTA: case OP_CVTA_TO: {
            /* cvta.space: state-space address to generic (a host pointer);
             * cvta.to.space: back. Global and const addresses are already
             * host pointers. */
            uintptr_t base = 0;
            if (in->space == S_SHARED)
                base = (uintptr_t)cta->shared;
            else if (in->space == S_PARAM)
                base = (uintptr_t)cta->launch->params;
            bool is_local = in->space == S_LOCAL;
            bool is_to = in->op == OP_CVTA_TO;
            LANES(exec) {
                uint64_t value = value_of(&o[1], r, l);
                uintptr_t lane_base = is_local ? (uintptr_t)cta->local +
                                                     (size_t)(warp->index * PTX_WARP_SIZE + l) * cta->local_bytes
                                               : base;
                d[l] = (is_to ? value - lane_base : value + lane_base) & mask_bits;
            }
            break;
        }
        case OP_ADD: case OP_SUB:
            if (type == T_F32) {
                ROUNDING_BEGIN(in->rounding)
                bool ftz = in->flags & F_FTZ, sat = in->flags & F_SAT;
                LANES(exec) {
                    float a = as_f32(value_of(&o[1], r, l)), b = as_f32(value_of(&o[2], r, l));
                    if (ftz) { a = flush_f32(a); b = flush_f32(b); }
                    float result = in->op == OP_ADD ? a + b : a - b;
                    if (sat) result = isnan(result) ? 0.0f : fminf(fmaxf(result, 0.0f), 1.0f);
                    if (ftz) result = flush_f32(result);
                    d[l] = from_f32(result);
                }
                ROUNDING_END();
            } else if (type == T_F64) {
                ROUNDING_BEGIN(in->rounding)
                LANES(exec) {
                    double a = as_f64(value_of(&o[1], r, l)), b = as_f64(value_of(&o[2], r, l));
                    d[l] = from_f64(in->op == OP_ADD ? a + b : a - b);
                }
                ROUNDING_END();
            } else if (is_half_type(type)) {
                LANES(exec)
                    if (!half_operation(in, in->op, value_of(&o[1], r, l), value_of(&o[2], r, l), 0, &d[l]))
                        goto unsupported;
            } else if (type_float(type)) {
                goto unsupported;
            } else if (in->flags & (F_CC | F_CARRY_IN)) {
                bool subtract = in->op == OP_SUB;
                LANES(exec) {
                    uint64_t a = value_of(&o[1], r, l) & mask_bits, b = value_of(&o[2], r, l) & mask_bits;
                    uint64_t carry_in = (in->flags & F_CARRY_IN) ? warp->carry[l] : 0;
                    uint64_t result;
                    bool carry_out;
                    if (!subtract) {
                        unsigned __int128 sum = (unsigned __int128)a + b + carry_in;
                        result = (uint64_t)sum & mask_bits;
                        carry_out = bits == 64 ? (sum >> 64) != 0 : ((uint64_t)sum >> bits) != 0;
                    } else {
                        unsigned __int128 subtrahend = (unsigned __int128)b + carry_in;
                        result = (a - (uint64_t)subtrahend) & mask_bits;
                        carry_out = (unsigned __int128)a < subtrahend;
                    }
                    if (in->flags & F_CC)
                        warp->carry[l] = carry_out;
                    d[l] = result;
                }
            } else if (in->flags & F_SAT) {
                LANES(exec) {
                    int64_t a = (int32_t)value_of(&o[1], r, l), b = (int32_t)value_of(&o[2], r, l);
                    int64_t result = in->op == OP_ADD ? a + b : a - b;
                    result = result > INT32_MAX ? INT32_MAX : result < INT32_MIN ? INT32_MIN : result;
                    d[l] = (uint64_t)result & 0xffffffffu;
                }
            } else {
                const struct ptx_operand *oa = &o[1], *ob = &o[2];
                if (in->op == OP_ADD) {
                    if (oa->kind == K_REG && ob->kind == K_REG) {
                        const uint64_t *a = REG(oa->reg), *b = REG(ob->reg);
                        LANES(exec) d[l] = (a[l] + b[l]) & mask_bits;
                    } else {
                        LANES(exec) d[l] = (value_of(oa, r, l) + value_of(ob, r, l)) & mask_bits;
                    }
                } else {
                    LANES(exec) d[l] = (value_of(oa, r, l) - value_of(ob, r, l)) & mask_bits;
                }
            }
            break;
        case OP_MUL: case OP_DIV: case OP_MIN: case OP_MAX:
            if (type == T_F32) {
                ROUNDING_BEGIN(in->rounding)
                bool ftz = in->flags & F_FTZ, sat = in->flags & F_SAT;
                LANES(exec) {
                    float a = as_f32(value_of(&o[1], r, l)), b = as_f32(value_of(&o[2], r, l));
                    if (ftz) { a = flush_f32(a); b = flush_f32(b); }
                    float result;
                    switch (in->op) {
                    case OP_MUL: result = a * b; break;
                    case OP_DIV: result = a / b; break;
                    case OP_MIN: result = fminf(a, b); break;
                    default: result = fmaxf(a, b); break;
                    }
                    if (sat) result = isnan(result) ? 0.0f : fminf(fmaxf(result, 0.0f), 1.0f);
                    if (ftz) result = flush_f32(result);
                    d[l] = from_f32(result);
                }
                ROUNDING_END();
            } else if (type == T_F64) {
                ROUNDING_BEGIN(in->rounding)
                LANES(exec) {
                    double a = as_f64(value_of(&o[1], r, l)), b = as_f64(value_of(&o[2], r, l));
                    double result = in->op == OP_MUL ? a * b : in->op == OP_DIV ? a / b
                                  : in->op == OP_MIN ? fmin(a, b) : fmax(a, b);
                    d[l] = from_f64(result);
                }
                ROUNDING_END();
            } else if (is_half_type(type)) {
                LANES(exec)
                    if (!half_operation(in, in->op, value_of(&o[1], r, l), value_of(&o[2], r, l), 0, &d[l]))
                        goto unsupported;
            } else if (type_float(type)) {
                goto unsupported;
            } else if (in->op == OP_MUL && bits == 32 && in->mode == MUL_WIDE) {
                /* Index arithmetic (mul.wide.s32/u32) is in almost every kernel. */
                if (type_signed(type)) {
                    LANES(exec)
                        d[l] = (uint64_t)((int64_t)(int32_t)value_of(&o[1], r, l) *
                                          (int64_t)(int32_t)value_of(&o[2], r, l));
                } else {
                    LANES(exec)
                        d[l] = (uint64_t)(uint32_t)value_of(&o[1], r, l) * (uint32_t)value_of(&o[2], r, l);
                }
            } else if (in->op == OP_MUL && bits == 32 && in->mode == MUL_LO) {
                LANES(exec)
                    d[l] = (uint32_t)((uint32_t)value_of(&o[1], r, l) * (uint32_t)value_of(&o[2], r, l));
            } else {
                bool divide_by_zero = false;
                LANES(exec)
                    d[l] = integer_binary(in->op, type, in->mode, value_of(&o[1], r, l), value_of(&o[2], r, l),
                                          &divide_by_zero);
            }
            break;
        case OP_REM: case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR: {
            if (type == T_PRED) {
                LANES(exec) {
                    bool a = predicate_of(&o[1], r, l), b = predicate_of(&o[2], r, l);
                    d[l] = in->op == OP_AND ? (a && b) : in->op == OP_OR ? (a || b) : (a != b);
                }
                break;
            }
            bool divide_by_zero = false;
            uint8_t op = in->op;
            if (op == OP_AND && o[1].kind == K_REG && o[2].kind == K_IMM) {
                const uint64_t *a = REG(o[1].reg);
                uint64_t b = (uint64_t)o[2].imm & mask_bits;
                LANES(exec) d[l] = a[l] & b;
            } else if (op == OP_SHL && o[2].kind == K_IMM && (uint64_t)o[2].imm < bits) {
                const struct ptx_operand *oa = &o[1];
                unsigned amount = (unsigned)o[2].imm;
                LANES(exec) d[l] = (value_of(oa, r, l) << amount) & mask_bits;
            } else {
                LANES(exec)
                    d[l] = integer_binary(op, type, in->mode, value_of(&o[1], r, l), value_of(&o[2], r, l),
                                          &divide_by_zero);
            }
            break;
        }
        case OP_NOT: case OP_CNOT: case OP_NEG: case OP_ABS: case OP_POPC: case OP_CLZ: case OP_BREV:
        case OP_BFIND:
            if ((in->op == OP_NEG || in->op == OP_ABS) && is_half_type(type)) {
                /* Sign-bit operations on each 16-bit half. */
                bool pair = type == T_F16X2 || type == T_BF16X2;
                uint64_t signs = pair ? 0x80008000u : 0x8000u, width = pair ? 0xffffffffu : 0xffffu;
                LANES(exec) {
                    uint64_t a = value_of(&o[1], r, l);
                    d[l] = in->op == OP_NEG ? (a ^ signs) & width : a & ~signs & width;
                }
                break;
            }
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l);
                uint64_t result = 0;
                switch (in->op) {
                case OP_NOT:
                    result = type == T_PRED ? !predicate_of(&o[1], r, l) : ~a & mask_bits;
                    break;
                case OP_CNOT: result = (a & mask_bits) == 0; break;
                case OP_NEG:
                    if (type == T_F32) result = from_f32(-as_f32(a));
                    else if (type == T_F64) result = a ^ 0x8000000000000000ull;
                    else result = (0 - a) & mask_bits;
                    break;
                case OP_ABS:
                    if (type == T_F32) result = a & 0x7fffffffu;
                    else if (type == T_F64) result = a & 0x7fffffffffffffffull;
                    else {
                        int64_t x = sign_extend(a, bits);
                        result = (x < 0 ? 0 - (uint64_t)x : (uint64_t)x) & mask_bits;
                    }
                    break;
                case OP_POPC: result = (unsigned)__builtin_popcountll(a & mask_bits); break;
                case OP_CLZ:
                    result = (a & mask_bits) == 0 ? bits : (unsigned)__builtin_clzll(a & mask_bits) - (64 - bits);
                    break;
                case OP_BREV: {
                    uint64_t value = a & mask_bits, reversed = 0;
                    for (unsigned i = 0; i < bits; i++)
                        reversed |= ((value >> i) & 1) << (bits - 1 - i);
                    result = reversed;
                    break;
                }
                default: { /* bfind: position of the most significant non-sign bit */
                    uint64_t value = a & mask_bits;
                    if (type_signed(type) && sign_extend(value, bits) < 0)
                        value = ~value & mask_bits;
                    result = value == 0 ? 0xffffffffu : 63u - (unsigned)__builtin_clzll(value);
                    if (in->mode == 1 && value != 0)
                        result = bits - 1 - result;
                    break;
                }
                }
                d[l] = result;
            }

            break;
        case OP_MAD:
            if (type == T_F32 || type == T_F64 || is_half_type(type)) {
                goto fused;
            } else if (bits == 32 && in->mode == MUL_LO && !(in->flags & (F_CC | F_CARRY_IN))) {
                LANES(exec)
                    d[l] = (uint32_t)((uint32_t)value_of(&o[1], r, l) * (uint32_t)value_of(&o[2], r, l) +
                                      (uint32_t)value_of(&o[3], r, l));
            } else {
                bool is_signed = type_signed(type);
                LANES(exec) {
                    uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l), c = value_of(&o[3], r, l);
                    uint64_t product;
                    if (in->mode == MUL_WIDE) {
                        product = is_signed ? (uint64_t)(sign_extend(a, bits) * sign_extend(b, bits))
                                            : (a & mask_bits) * (b & mask_bits);
                        if (in->flags & (F_CC | F_CARRY_IN)) {
                            unsigned __int128 sum = (unsigned __int128)product + c +
                                                    ((in->flags & F_CARRY_IN) ? warp->carry[l] : 0);
                            if (in->flags & F_CC)
                                warp->carry[l] = (sum >> 64) != 0;
                            d[l] = (uint64_t)sum;
                        } else {
                            d[l] = (product + c) & width_mask(bits * 2);
                        }
                        continue;
                    }
                    bool unused = false;
                    product = integer_binary(OP_MUL, type, in->mode, a, b, &unused);
                    if (in->flags & (F_CC | F_CARRY_IN)) {
                        unsigned __int128 sum = (unsigned __int128)(product & mask_bits) + (c & mask_bits) +
                                                ((in->flags & F_CARRY_IN) ? warp->carry[l] : 0);
                        if (in->flags & F_CC)
                            warp->carry[l] = bits == 64 ? (sum >> 64) != 0 : ((uint64_t)sum >> bits) != 0;
                        d[l] = (uint64_t)sum & mask_bits;
                    } else {
                        d[l] = (product + c) & mask_bits;
                    }
                }
            }
            break;
        case OP_FMA:
        fused:
            if (type == T_F32 && !(in->flags & (F_FTZ | F_SAT)) && !needs_rounding_mode(in->rounding) &&
                host_has_fma()) {
                fma_f32_with_instruction(exec, d, r, o);
            } else if (type == T_F32) {
                ROUNDING_BEGIN(in->rounding)
                bool ftz = in->flags & F_FTZ, sat = in->flags & F_SAT;
                LANES(exec) {
                    float a = as_f32(value_of(&o[1], r, l)), b = as_f32(value_of(&o[2], r, l)),
                          c = as_f32(value_of(&o[3], r, l));
                    if (ftz) { a = flush_f32(a); b = flush_f32(b); c = flush_f32(c); }
                    float result = fmaf(a, b, c);
                    if (sat) result = isnan(result) ? 0.0f : fminf(fmaxf(result, 0.0f), 1.0f);
                    if (ftz) result = flush_f32(result);
                    d[l] = from_f32(result);
                }
                ROUNDING_END();
            } else if (type == T_F64) {
                ROUNDING_BEGIN(in->rounding)
                LANES(exec)
                    d[l] = from_f64(fma(as_f64(value_of(&o[1], r, l)), as_f64(value_of(&o[2], r, l)),
                                        as_f64(value_of(&o[3], r, l))));
                ROUNDING_END();
            } else if (is_half_type(type)) {
                LANES(exec)
                    if (!half_operation(in, OP_FMA, value_of(&o[1], r, l), value_of(&o[2], r, l),
                                        value_of(&o[3], r, l), &d[l]))
                        goto unsupported;
            } else {
                goto unsupported;
            }
            break;
        case OP_MUL24: case OP_MAD24:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l);
                int64_t product = type_signed(type) ? sign_extend(a, 24) * sign_extend(b, 24)
                                                    : (int64_t)((a & 0xffffff) * (b & 0xffffff));
                uint64_t result = in->mode == MUL_HI ? ((uint64_t)product >> 16) : (uint64_t)product;
                if (in->op == OP_MAD24)
                    result += value_of(&o[3], r, l);
                d[l] = result & 0xffffffffu;
            }
            break;
        case OP_SAD:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l), c = value_of(&o[3], r, l);
                uint64_t difference;
                if (type_signed(type)) {
                    int64_t x = sign_extend(a, bits), y = sign_extend(b, bits);
                    difference = x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x;
                } else {
                    a &= mask_bits;
                    b &= mask_bits;
                    difference = a > b ? a - b : b - a;
                }
                d[l] = (difference + c) & mask_bits;
            }
            break;
        case OP_BFE:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l) & mask_bits;
                unsigned position = (unsigned)value_of(&o[2], r, l) & 0xff;
                unsigned length = (unsigned)value_of(&o[3], r, l) & 0xff;
                uint64_t result;
                bool sign = false;
                if (type_signed(type)) {
                    unsigned top = position + length - 1;
                    sign = length == 0 ? false : ((a >> (top >= bits ? bits - 1 : top)) & 1);
                }
                if (length == 0) {
                    result = 0;
                } else {
                    result = position >= bits ? 0 : a >> position;
                    if (length < 64)
                        result &= (1ull << length) - 1;
                    if (sign && length < bits)
                        result |= ~((1ull << length) - 1);
                    if (type_signed(type) && position >= bits)
                        result = sign_extend(a, bits) < 0 ? ~0ull : 0;
                }
                d[l] = result & mask_bits;
            }
            break;
        case OP_BFI:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l);
                unsigned position = (unsigned)value_of(&o[3], r, l) & 0xff;
                unsigned length = (unsigned)value_of(&o[4], r, l) & 0xff;
                uint64_t result = b;
                for (unsigned i = 0; i < length && position + i < bits; i++) {
                    uint64_t bit = 1ull << (position + i);
                    result = (result & ~bit) | (((a >> i) & 1) << (position + i));
                }
                d[l] = result & mask_bits;
            }
            break;
        case OP_PRMT:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l) & 0xffffffffu, b = value_of(&o[2], r, l) & 0xffffffffu;
                unsigned selector = (unsigned)value_of(&o[3], r, l);
                uint64_t bytes = a | (b << 32);
                uint32_t result = 0;
                for (unsigned i = 0; i < 4; i++) {
                    unsigned nibble = (selector >> (i * 4)) & 0xf;
                    uint8_t byte = (uint8_t)(bytes >> ((nibble & 7) * 8));
                    if (nibble & 8)
                        byte = (byte & 0x80) ? 0xff : 0;
                    result |= (uint32_t)byte << (i * 8);
                }
                d[l] = result;
            }
            break;
        case OP_LOP3:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l), c = value_of(&o[3], r, l);
                unsigned table = (unsigned)value_of(&o[4], r, l) & 0xff;
                uint64_t result = 0;
                for (unsigned i = 0; i < 8; i++)
                    if (table & (1u << i))
                        result |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
                d[l] = result & mask_bits;
            }
            break;
        case OP_SHF:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l) & 0xffffffffu, b = value_of(&o[2], r, l) & 0xffffffffu;
                unsigned amount = (unsigned)value_of(&o[3], r, l);
                amount = (in->mode & 1) ? (amount > 32 ? 32 : amount) : (amount & 31);
                uint64_t joined = (b << 32) | a;
                d[l] = (in->mode & 2) ? (uint32_t)(joined >> amount) : (uint32_t)((joined << amount) >> 32);
            }
            break;
        case OP_SETP: {
            unsigned source = in->has_pair ? 2 : 1;
            uint64_t *q = in->has_pair ? REG(o[1].reg) : NULL;
            bool is_float = type_float(type);
            if (is_float && type != T_F32 && type != T_F64 && type != T_F16 && type != T_BF16)
                goto unsupported;
            if (!is_float && in->boolop == BOOL_NONE && q == NULL && o[source].kind == K_REG) {
                LANES(exec)
                    d[l] = compare_integer(in->mode, type, REG(o[source].reg)[l], value_of(&o[source + 1], r, l));
                break;
            }
            LANES(exec) {
                uint64_t a = value_of(&o[source], r, l), b = value_of(&o[source + 1], r, l);
                bool result;
                if (is_float) {
                    double x = read_float(a, type), y = read_float(b, type);
                    if (in->flags & F_FTZ && type == T_F32) {
                        x = flush_f32((float)x);
                        y = flush_f32((float)y);
                    }
                    result = compare_float(in->mode, x, y);
                } else {
                    result = compare_integer(in->mode, type, a, b);
                }
                bool p = result, not_p = !result;
                if (in->boolop != BOOL_NONE) {
                    bool c = predicate_of(&o[source + 2], r, l);
                    switch (in->boolop) {
                    case BOOL_AND: p = p && c; not_p = not_p && c; break;
                    case BOOL_OR: p = p || c; not_p = not_p || c; break;
                    default: p = p != c; not_p = not_p != c; break;
                    }
                }
                d[l] = p;
                if (q != NULL)
                    q[l] = not_p;
            }
            break;
        }
        case OP_SET:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l);
                bool result = type_float(in->type2) ? compare_float(in->mode, read_float(a, in->type2), read_float(b, in->type2))
                                                    : compare_integer(in->mode, in->type2, a, b);
                if (in->boolop != BOOL_NONE) {
                    bool c = predicate_of(&o[3], r, l);
                    result = in->boolop == BOOL_AND ? result && c : in->boolop == BOOL_OR ? result || c : result != c;
                }
                d[l] = type == T_F32 ? (result ? from_f32(1.0f) : 0) : (result ? mask_bits : 0);
            }
            break;
        case OP_SELP:
            LANES(exec)
                d[l] = (predicate_of(&o[3], r, l) ? value_of(&o[1], r, l) : value_of(&o[2], r, l)) & mask_bits;
            break;
        case OP_SLCT:
            LANES(exec) {
                uint64_t c = value_of(&o[3], r, l);
                bool choose_a = in->type2 == T_F32 ? !(as_f32(c) < 0.0f) : (int32_t)c >= 0;
                d[l] = (choose_a ? value_of(&o[1], r, l) : value_of(&o[2], r, l)) & mask_bits;
            }
            break;
        case OP_CVT:
            if ((type_float(type) && type != T_F32 && type != T_F64 && type != T_F16 && type != T_BF16) ||
                (type_float(in->type2) && in->type2 != T_F32 && in->type2 != T_F64 && in->type2 != T_F16 &&
                 in->type2 != T_BF16))
                goto unsupported;
            LANES(exec) d[l] = convert(in, value_of(&o[1], r, l));
            break;
        case OP_RCP: case OP_SQRT: case OP_RSQRT: case OP_SIN: case OP_COS: case OP_LG2: case OP_EX2:
        case OP_TANH:
            if (type == T_F32) {
                ROUNDING_BEGIN(in->rounding)
                bool ftz = in->flags & F_FTZ;
                LANES(exec) {
                    float a = as_f32(value_of(&o[1], r, l));
                    if (ftz) a = flush_f32(a);
                    float result;
                    switch (in->op) {
                    case OP_RCP: result = 1.0f / a; break;
                    case OP_SQRT: result = sqrtf(a); break;
                    case OP_RSQRT: result = 1.0f / sqrtf(a); break;
                    case OP_SIN: result = sinf(a); break;
                    case OP_COS: result = cosf(a); break;
                    case OP_LG2: result = log2f(a); break;
                    case OP_EX2: result = exp2f(a); break;
                    default: result = tanhf(a); break;
                    }
                    if (ftz) result = flush_f32(result);
                    d[l] = from_f32(result);
                }
                ROUNDING_END();
            } else if (type == T_F64) {
                ROUNDING_BEGIN(in->rounding)
                LANES(exec) {
                    double a = as_f64(value_of(&o[1], r, l));
                    double result;
                    switch (in->op) {
                    case OP_RCP: result = 1.0 / a; break;
                    case OP_SQRT: result = sqrt(a); break;
                    case OP_RSQRT: result = 1.0 / sqrt(a); break;
                    case OP_SIN: result = sin(a); break;
                    case OP_COS: result = cos(a); break;
                    case OP_LG2: result = log2(a); break;
                    case OP_EX2: result = exp2(a); break;
                    default: result = tanh(a); break;
                    }
                    d[l] = from_f64(result);
                }
                ROUNDING_END();
            } else {
                goto unsupported;
            }
            break;
        case OP_TESTP:
            LANES(exec) {
                double a = read_float(value_of(&o[1], r, l), type);
                bool result;
                switch (in->mode) {
                case TESTP_FINITE: result = isfinite(a); break;
                case TESTP_INFINITE: result = isinf(a); break;
                case TESTP_NUMBER: result = !isnan(a); break;
                case TESTP_NOTANUMBER: result = isnan(a); break;
                case TESTP_NORMAL:
                    result = type == T_F32 ? fpclassify((float)a) == FP_NORMAL : fpclassify(a) == FP_NORMAL;
                    break;
                default:
                    result = type == T_F32 ? fpclassify((float)a) == FP_SUBNORMAL : fpclassify(a) == FP_SUBNORMAL;
                    break;
                }
                d[l] = result;
            }
            break;
        case OP_COPYSIGN:
            LANES(exec) {
                uint64_t a = value_of(&o[1], r, l), b = value_of(&o[2], r, l);
                d[l] = type == T_F64 ? (b & 0x7fffffffffffffffull) | (a & 0x8000000000000000ull)
                                     : (b & 0x7fffffffu) | (a & 0x80000000u);
            }
            break;
        case OP_DP4A:
            LANES(exec) {
                uint32_t a = (uint32_t)value_of(&o[1], r, l), b = (uint32_t)value_of(&o[2], r, l);
                int64_t sum = (int32_t)value_of(&o[3], r, l);
                for (unsigned i = 0; i < 4; i++) {
                    int64_t x = type_signed(type) ? (int8_t)(a >> (8 * i)) : (uint8_t)(a >> (8 * i));
                    int64_t y = type_signed(in->type2) ? (int8_t)(b >> (8 * i)) : (uint8_t)(b >> (8 * i));
                    sum += x * y;
                }
                d[l] = (uint64_t)sum & 0xffffffffu;
            }
            break;
        case OP_ATOM: case OP_RED: {
            bool is_red = in->op == OP_RED;
            const struct ptx_operand *address = is_red ? &o[0] : &o[1];
            const struct ptx_operand *b = is_red ? &o[1] : &o[2];
            const struct ptx_operand *c = is_red ? &o[2] : &o[3];
            size_t size = bits / 8;
            if (bits != 32 && bits != 64)
                goto unsupported;
            /* Lanes update in lane order, as one atomic each. */
            LANES(exec) {
                unsigned char *pointer = resolve_address(cta, warp, in, in->space == S_GENERIC ? S_GENERIC : in->space,
                                                         address, l, size, PTX_ACCESS_ATOMIC);
                if (pointer == NULL)
                    break;
                uint64_t old;
                if (!atomic_update(pointer, type, in->mode, value_of(b, r, l),
                                   in->mode == ATOM_CAS ? value_of(c, r, l) : 0, &old)) {
                    fault(cta, PTX_UNSUPPORTED, in, "unsupported atomic operation");
                    break;
                }
                if (!is_red)
                    d[l] = old & mask_bits;
            }
            break;
        }
        case OP_SHFL: {
            /* shfl.sync.mode.b32 d[|p], a, b, c, membermask: every lane reads
             * its source lane before any lane writes. */
            unsigned source = in->has_pair ? 2 : 1;
            uint64_t *p = in->has_pair ? REG(o[1].reg) : NULL;
            uint64_t results[PTX_WARP_SIZE];
            bool valid[PTX_WARP_SIZE];
            LANES(exec) {
                unsigned b = (unsigned)value_of(&o[source + 1], r, l) & 0x1f;
                unsigned c = (unsigned)value_of(&o[source + 2], r, l);
                unsigned clamp = c & 0x1f, segment = (c >> 8) & 0x1f;
                int max_lane = (int)((l & segment) | (clamp & ~segment));
                int min_lane = (int)(l & segment);
                int j;
                bool in_range;
                switch (in->mode) {
                case SHFL_UP: j = (int)l - (int)b; in_range = j >= max_lane; break;
                case SHFL_DOWN: j = (int)l + (int)b; in_range = j <= max_lane; break;
                case SHFL_BFLY: j = (int)(l ^ b); in_range = j <= max_lane; break;
                default: j = min_lane | (int)(b & ~segment); in_range = j <= max_lane; break;
                }
                if (!in_range)
                    j = (int)l;
                results[l] = value_of(&o[source], r, (unsigned)j) & 0xffffffffu;
                valid[l] = in_range;
            }
            LANES(exec) {
                d[l] = results[l];
                if (p != NULL)
                    p[l] = valid[l];
            }
            break;
        }
        case OP_VOTE: {
            /* vote.sync.mode d, {!}p, membermask */
            uint32_t ballot = 0;
            LANES(exec)
                if (predicate_of(&o[1], r, l))
                    ballot |= 1u << l;
            LANES(exec) {
                uint32_t members = (uint32_t)value_of(&o[2], r, l) & exec;
                uint32_t mine = ballot & members;
                switch (in->mode) {
                case VOTE_BALLOT: d[l] = mine; break;
                case VOTE_ALL: d[l] = mine == members; break;
                case VOTE_ANY: d[l] = mine != 0; break;
                default: d[l] = mine == 0 || mine == members; break;
                }
            }
            break;
        }
        case OP_MATCH: {
            /* match.any/all.sync.b32/b64 d[|p], a, membermask */
            unsigned source = in->has_pair ? 2 : 1;
            uint64_t *p = in->has_pair ? REG(o[1].reg) : NULL;
            uint64_t results[PTX_WARP_SIZE];
            bool all_equal[PTX_WARP_SIZE];
            LANES(exec) {
                uint32_t members = (uint32_t)value_of(&o[source + 1], r, l) & exec;
                uint64_t mine = value_of(&o[source], r, l) & mask_bits;
                uint32_t same = 0;
                for (unsigned other = 0; other < PTX_WARP_SIZE; other++)
                    if ((members >> other) & 1 && (value_of(&o[source], r, other) & mask_bits) == mine)
                        same |= 1u << other;
                all_equal[l] = same == members;
                results[l] = in->mode ? (same == members ? members : 0) : same;
            }
            LANES(exec) {
                d[l] = results[l];
                if (p != NULL)
                    p[l] = all_equal[l];
            }
            break;
        }
        case OP_REDUX: {
            /* redux.sync.op d, a, membermask: one value for the warp. */
            bool is_signed = type_signed(type);
            uint32_t members = exec;
            if (exec != 0)
                members &= (uint32_t)value_of(&o[2], r, __builtin_ctz(exec));
            uint32_t total = in->mode == ATOM_AND ? 0xffffffffu : 0;
            bool first = true;
            LANES(members) {
                uint32_t value = (uint32_t)value_of(&o[1], r, l);
                switch (in->mode) {
                case ATOM_ADD: total += value; break;
                case ATOM_AND: total &= value; break;
                case ATOM_OR: total |= value; break;
                case ATOM_XOR: total ^= value; break;
                case ATOM_MIN:
                    if (first || (is_signed ? (int32_t)value < (int32_t)total : value < total))
                        total = value;
                    break;
                case ATOM_MAX:
                    if (first || (is_signed ? (int32_t)value > (int32_t)total : value > total))
                        total = value;
                    break;
                default: goto unsupported;
                }
                first = false;
            }
            LANES(exec) d[l] = total;
            break;
        }
        case OP_ACTIVEMASK:
            LANES(exec) d[l] = mask;
            break;
        case OP_CALL_VPRINTF:
            LANES(exec) {
                unsigned thread = warp->index * PTX_WARP_SIZE + l;
                unsigned char *area = cta->call_params + (size_t)thread * function->call_param_bytes;
                uint64_t format, arguments;
                memcpy(&format, area + o[0].imm, 8);
                memcpy(&arguments, area + o[1].imm, 8);
                struct ptx_operand format_operand = {.kind = K_ADDR, .reg = PTX_NO_REGISTER, .imm = (int64_t)format};
                if (resolve_address(cta, warp, in, S_GENERIC, &format_operand, l, 1, PTX_ACCESS_LOAD) == NULL)
                    break;
                int written = ptx_vprintf((const char *)(uintptr_t)format, (const unsigned char *)(uintptr_t)arguments);
                if (o[2].kind == K_IMM) {
                    int32_t result = written;
                    memcpy(area + o[2].imm, &result, 4);
                }
            }
            break;
        case OP_CP_ASYNC: {
            /* cp.async [shared], [global], size[, source size]: done at once;
             * the bytes past the source size are zero-filled. */
            if (in->operand_count < 3)
                goto unsupported;
            LANES(exec) {
                size_t size = (size_t)value_of(&o[2], r, l);
                size_t source_size = in->operand_count >= 4 && o[3].kind != K_NONE ? (size_t)value_of(&o[3], r, l)
                                                                                    : size;
                if (source_size > size)
                    source_size = size;
                unsigned char *destination = resolve_address(cta, warp, in, S_SHARED, &o[0], l, size, PTX_ACCESS_STORE);
                if (destination == NULL)
                    break;
                if (source_size > 0) {
                    unsigned char *source = resolve_address(cta, warp, in, S_GLOBAL, &o[1], l, source_size, PTX_ACCESS_LOAD);
                    if (source == NULL)
                        break;
                    memcpy(destination, source, source_size);
                }
                memset(destination + source_size, 0, size - source_size);
            }
            break;
        }
        case OP_CALL_ASSERT:
            /* __assertfail(message, file, line, function, char size): the
             * device runtime's report, then the kernel stops. */
            LANES(exec) {
                unsigned thread = warp->index * PTX_WARP_SIZE + l;
                unsigned char *area = cta->call_params + (size_t)thread * function->call_param_bytes;
                uint64_t message, file, function_name;
                uint32_t source_line;
                memcpy(&message, area + o[0].imm, 8);
                memcpy(&file, area + o[1].imm, 8);
                memcpy(&source_line, area + o[2].imm, 4);
                memcpy(&function_name, area + o[3].imm, 8);
                const struct ptx_launch *launch = cta->launch;
                unsigned bx = launch->block[0], by = launch->block[1];
                fprintf(stderr, "%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n",
                        file ? (const char *)(uintptr_t)file : "?", source_line,
                        function_name ? (const char *)(uintptr_t)function_name : "?", cta->ctaid[0], cta->ctaid[1],
                        cta->ctaid[2], thread % bx, (thread / bx) % by, thread / (bx * by),
                        message ? (const char *)(uintptr_t)message : "?");
            }
            if (exec != 0)
                fault(cta, PTX_ASSERT, in, "device-side assertion failed");
            break;
        case OP_TRAP:
            if (exec != 0) {
                if (function->decode_error != NULL)
                    fault(cta, PTX_UNSUPPORTED, in, "%s", function->decode_error);
                else
                    fault(cta, PTX_TRAP, in, "trap");
            }
            break;
        case OP_BRA: {
            if (exec == 0)
                break;
            /* Lanes that keep looping while others of their warp wait
             * (a spin lock held by a waiting lane) would starve them: after
             * SPIN_LIMIT such branches the next group runs for a while, the
             * forward progress Volta's independent thread scheduling gives. */
            if (warp->lanes_in_calls > 0) {
                /* Scheduling picks again after every instruction here. */
            } else if (in->target <= warp->current_pc && ++warp->backward_branches > SPIN_LIMIT &&
                warp->other_min == UINT32_MAX) {
                /* The whole warp loops: perhaps waiting for another warp,
                 * which gets its turn sooner if this one yields now. */
                warp->backward_branches = 0;
                budget = 0;
            } else if (in->target <= warp->current_pc && warp->backward_branches > SPIN_LIMIT) {
                warp->backward_branches = 0;
                uint32_t spinning_pc = in->target;
                uint32_t next_pc = warp->current_pc + 1;
                LANES(mask)
                    warp->pc[l] = (exec >> l) & 1 ? in->target : next_pc;
                warp->active = 0;
                schedule_above(warp, spinning_pc);
                warp->forced = true;
                continue;
            }
            if (exec == mask) {
                warp->current_pc = in->target;
                /* Lanes waiting at or below the target go first or join. */
                if (in->target >= warp->other_min)
                    schedule(warp);
                continue;
            }
            uint32_t next_pc = warp->current_pc + 1;
            LANES(mask)
                warp->pc[l] = (exec >> l) & 1 ? in->target : next_pc;
            warp->active = 0;
            continue;
        }
        case OP_CALL_FUNCTION: {
            const struct ptx_call_site *site = &function->call_sites[in->target];
            uint32_t next_pc = warp->current_pc + 1;
            LANES(mask) {
                if (!((exec >> l) & 1)) {
                    warp->pc[l] = next_pc;
                    continue;
                }
                if (warp->depth[l] == PTX_MAX_CALL_DEPTH) {
                    fault(cta, PTX_UNSUPPORTED, in, "device functions nested deeper than %d calls",
                          PTX_MAX_CALL_DEPTH);
                    break;
                }
                unsigned char *area = cta->call_params +
                                      (size_t)(warp->index * PTX_WARP_SIZE + l) * function->call_param_bytes;
                for (unsigned a = 0; a < site->argument_count; a++)
                    memmove(area + site->to[a], area + site->from[a], site->size[a]);
                if (warp->depth[l] == 0)
                    warp->lanes_in_calls++;
                warp->frames[l][warp->depth[l]].return_pc = next_pc;
                warp->frames[l][warp->depth[l]].site = in->target;
                warp->depth[l]++;
                warp->pc[l] = site->entry;
            }
            warp->active = 0;
            continue;
        }
        case OP_RET: case OP_EXIT: {
            uint32_t next_pc = warp->current_pc + 1;
            LANES(mask & ~exec)
                warp->pc[l] = next_pc;
            if (in->op == OP_RET && warp->lanes_in_calls > 0) {
                /* A return from a device function: back to the call site
                 * with the return value; only outermost returns exit. */
                uint32_t returning = 0;
                LANES(exec) {
                    if (warp->depth[l] == 0)
                        continue;
                    returning |= 1u << l;
                    unsigned level = --warp->depth[l];
                    const struct ptx_call_site *site = &function->call_sites[warp->frames[l][level].site];
                    if (site->has_return) {
                        unsigned char *area = cta->call_params +
                                              (size_t)(warp->index * PTX_WARP_SIZE + l) * function->call_param_bytes;
                        memmove(area + site->return_to, area + site->return_from, site->return_size);
                    }
                    warp->pc[l] = warp->frames[l][level].return_pc;
                    if (level == 0)
                        warp->lanes_in_calls--;
                }
                exec &= ~returning;
            }
            LANES(exec) {
                if (warp->depth[l] > 0) {
                    warp->depth[l] = 0;
                    warp->lanes_in_calls--;
                }
            }
            warp->exited |= exec;
            cta->live_threads -= popcount32(exec);
            warp->active = 0;
            continue;
        }
        case OP_BAR: {
            /* bar.sync a[, b]; bar.red.op d, a[, b], {!}c reduces c over the
             * arriving threads and gives every one of them the result. */
            bool reducing = in->mode != BAR_PLAIN;
            const struct ptx_operand *barrier = reducing ? &o[1] : &o[0];
            unsigned id = (unsigned)value_of(barrier, r, __builtin_ctz(mask)) & (MAX_BARRIERS - 1);
            if (in->operand_count == 0)
                id = 0;
            if (in->flags & F_HAS_COUNT)
                cta->expected[id] = (unsigned)value_of(barrier + 1, r, __builtin_ctz(mask));
            if (reducing) {
                const struct ptx_operand *predicate = &o[in->operand_count - 1];
                LANES(exec)
                    cta->true_count[id] += predicate_of(predicate, r, l);
                cta->reduction[id] = in->mode;
                cta->result_slot[id] = o[0].reg;
            }
            uint32_t next_pc = warp->current_pc + 1;
            cta->arrived[id] += popcount32(exec);
            LANES(mask)
                warp->pc[l] = next_pc;
            if (!(in->flags & F_BAR_ARRIVE)) {
                LANES(exec)
                    warp->barrier[l] = (uint8_t)id;
                warp->blocked |= exec;
            }
            warp->active = 0;
            bool released = false;
            release_barriers(cta, &released);
            continue;
        }
        default:
        unsupported:
            fault(cta, PTX_UNSUPPORTED, in, "unsupported instruction form (opcode %u, type %u)", in->op, type);
            continue;
        }
        /* Straight-line advance; lanes waiting at the next pc join. */
        warp->current_pc++;
        if (warp->current_pc >= warp->other_min && !warp->forced)
            schedule(warp);
    }
    cta->instructions += executed;
}

/* ---- a CTA -------------------------------------------------------------- */

static void *grow(void **buffer, size_t *capacity, size_t needed)
{
    if (needed <= *capacity)
        return *buffer;
    void *grown = realloc(*buffer, needed);
    if (grown == NULL)
        return NULL;
    *buffer = grown;
    *capacity = needed;
    return grown;
}

/* Sets up CTA `ctaid` in `memory`; false (with cta->status set) when host
 * memory runs out. */
static bool cta_begin(struct cta *cta, struct ptx_launch *launch, struct ptx_cta_memory *memory,
                      unsigned worker, const unsigned ctaid[3])
{
    const struct ptx_function *function = launch->function;
    *cta = (struct cta){
        .function = function, .launch = launch, .memory = memory, .worker = worker,
        .ctaid = {ctaid[0], ctaid[1], ctaid[2]},
    };
    cta->thread_count = launch->block[0] * launch->block[1] * launch->block[2];
    cta->warp_count = (cta->thread_count + PTX_WARP_SIZE - 1) / PTX_WARP_SIZE;
    cta->live_threads = cta->thread_count;
    cta->shared_bytes = function->static_shared_bytes == 0 && launch->dynamic_shared_bytes == 0
                            ? 0
                            : (function->static_shared_bytes + 15) / 16 * 16 + launch->dynamic_shared_bytes;
    cta->local_bytes = function->local_bytes;
    size_t register_values = (size_t)function->register_count * PTX_WARP_SIZE;
    size_t register_bytes = register_values * sizeof(uint64_t) * cta->warp_count;
    size_t call_bytes = function->call_param_bytes * cta->thread_count;
    if (!grow(&memory->registers, &memory->register_capacity, register_bytes + 64) ||
        !grow(&memory->shared, &memory->shared_capacity, cta->shared_bytes + 16) ||
        !grow(&memory->local, &memory->local_capacity, cta->local_bytes * cta->thread_count + 16) ||
        !grow(&memory->call_params, &memory->call_param_capacity, call_bytes + 16) ||
        !grow((void **)&memory->warps, &memory->warp_capacity, cta->warp_count * sizeof(struct warp))) {
        ptx_grid_report(launch, PTX_OUT_OF_MEMORY, "kernel %s: out of host memory for a CTA", function->name);
        cta->status = PTX_OUT_OF_MEMORY;
        return false;
    }
    /* Registers start at zero so a kernel that reads one before writing it
     * behaves the same on every run. */
    memset(memory->registers, 0, register_bytes);
    memset(memory->shared, 0, cta->shared_bytes);
    cta->shared = memory->shared;
    cta->local = memory->local;
    cta->call_params = memory->call_params;
    cta->warps = memory->warps;
    for (unsigned w = 0; w < cta->warp_count; w++) {
        struct warp *warp = &cta->warps[w];
        memset(warp, 0, sizeof *warp);
        warp->index = w;
        warp->r = (uint64_t *)memory->registers + register_values * w;
        unsigned lanes = cta->thread_count - w * PTX_WARP_SIZE;
        warp->exists = lanes >= PTX_WARP_SIZE ? 0xffffffffu : (1u << lanes) - 1;
        warp->other_min = UINT32_MAX;
        for (unsigned s = 0; s < function->special_count; s++) {
            uint64_t *slot = warp->r + (size_t)function->specials[s].slot * PTX_WARP_SIZE;
            for (unsigned lane = 0; lane < PTX_WARP_SIZE; lane++)
                slot[lane] = special_value(cta, warp, function->specials[s].special, lane);
        }
    }
    return true;
}

/* Runs up to `rounds` rounds (every runnable warp one slice, then the
 * barriers); true once the CTA has finished or failed. */
static bool cta_continue(struct cta *cta, unsigned long long rounds)
{
    for (unsigned long long round = 0; round < rounds; round++) {
        if (cta->live_threads == 0 || cta->status != PTX_OK)
            return true;
        bool ran = false;
        for (unsigned w = 0; w < cta->warp_count && cta->status == PTX_OK; w++) {
            struct warp *warp = &cta->warps[w];
            if ((warp->exists & ~warp->exited & ~warp->blocked) == 0)
                continue;
            run_warp(cta, warp, SLICE_INSTRUCTIONS);
            ran = true;
        }
        bool released = false;
        release_barriers(cta, &released);
        if (!ran && !released && cta->live_threads > 0 && cta->status == PTX_OK)
            fault(cta, PTX_DEADLOCK, NULL, "every live thread waits at a barrier that cannot complete");
    }
    return cta->live_threads == 0 || cta->status != PTX_OK;
}

enum ptx_status ptx_run_cta(struct ptx_launch *launch, struct ptx_cta_memory *memory, unsigned worker,
                            const unsigned ctaid[3])
{
    struct cta cta;
    if (cta_begin(&cta, launch, memory, worker, ctaid))
        cta_continue(&cta, ~0ULL);
    atomic_fetch_add_explicit(&ptx_executed_thread_instructions, cta.instructions, memory_order_relaxed);
    return cta.status;
}

struct ptx_cta_run {
    struct cta cta;
};

struct ptx_cta_run *ptx_cta_start(struct ptx_launch *launch, struct ptx_cta_memory *memory,
                                  unsigned worker, const unsigned ctaid[3])
{
    struct ptx_cta_run *run = malloc(sizeof *run);
    if (run == NULL) {
        ptx_grid_report(launch, PTX_OUT_OF_MEMORY, "kernel %s: out of host memory for a CTA",
                        launch->function->name);
        return NULL;
    }
    cta_begin(&run->cta, launch, memory, worker, ctaid);
    return run;
}

bool ptx_cta_resume(struct ptx_cta_run *run, unsigned rounds)
{
    return cta_continue(&run->cta, rounds);
}

enum ptx_status ptx_cta_finish(struct ptx_cta_run *run)
{
    enum ptx_status status = run->cta.status;
    atomic_fetch_add_explicit(&ptx_executed_thread_instructions, run->cta.instructions,
                              memory_order_relaxed);
    free(run);
    return status;
}

void ptx_cta_memory_release(struct ptx_cta_memory *memory)
{
    free(memory->registers);
    free(memory->shared);
    free(memory->local);
    free(memory->call_params);
    free(memory->warps);
    memset(memory, 0, sizeof *memory);
}
