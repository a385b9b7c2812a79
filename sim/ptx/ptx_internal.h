/* The decoded form of PTX shared by the parser and the interpreter.
 *
 * Every register is resolved to a slot number; a warp keeps its registers
 * as slot-major arrays of 32 lanes (value of slot s in lane l at
 * registers[s * 32 + l]), each 64 bits wide whatever the PTX type, so an
 * instruction is one dispatch followed by a tight loop over its lanes.
 * Symbols (parameters, variables, shared and local arrays) are resolved to
 * immediates or offsets in their state space while decoding. */
#ifndef PTX_INTERNAL_H
#define PTX_INTERNAL_H

#include <stdatomic.h>

#include "ptx.h"

#define PTX_WARP_SIZE 32
#define PTX_NO_REGISTER UINT32_MAX

enum ptx_type {
    T_NONE,
    T_B8, T_B16, T_B32, T_B64, T_B128,
    T_U8, T_U16, T_U32, T_U64,
    T_S8, T_S16, T_S32, T_S64,
    T_F16, T_F16X2, T_BF16, T_BF16X2, T_F32, T_F64,
    T_PRED,
};

enum ptx_space {
    S_GENERIC,
    S_GLOBAL,
    S_SHARED,
    S_LOCAL,
    S_CONST,
    S_PARAM,      /* the kernel's parameter buffer */
    S_CALL_PARAM, /* a call's .param scratch (per thread) */
};

enum ptx_opcode {
    OP_MOV, OP_LD, OP_ST, OP_CVTA, OP_CVTA_TO,
    OP_ADD, OP_SUB, OP_MUL, OP_MAD, OP_MUL24, OP_MAD24, OP_SAD, OP_DIV, OP_REM,
    OP_ABS, OP_NEG, OP_MIN, OP_MAX,
    OP_AND, OP_OR, OP_XOR, OP_NOT, OP_CNOT, OP_SHL, OP_SHR,
    OP_POPC, OP_CLZ, OP_BREV, OP_BFE, OP_BFI, OP_PRMT, OP_LOP3, OP_SHF, OP_BFIND,
    OP_SETP, OP_SELP, OP_SET, OP_SLCT, OP_CVT,
    OP_FMA, OP_RCP, OP_SQRT, OP_RSQRT, OP_SIN, OP_COS, OP_LG2, OP_EX2, OP_TANH,
    OP_TESTP, OP_COPYSIGN,
    OP_BRA, OP_RET, OP_EXIT, OP_BAR, OP_BAR_WARP, OP_NOP,
    OP_ATOM, OP_RED, OP_REDUX, OP_SHFL, OP_VOTE, OP_ACTIVEMASK, OP_MATCH,
    OP_CALL_VPRINTF, OP_CALL_ASSERT, OP_CALL_FUNCTION, OP_CP_ASYNC, OP_TRAP, OP_CLOCK, OP_DP4A,
};

enum ptx_operand_kind {
    K_NONE,
    K_REG,    /* slot */
    K_IMM,    /* imm */
    K_VEC,    /* vec[0..count) slots */
    K_ADDR,   /* [slot + imm], slot may be PTX_NO_REGISTER */
};

struct ptx_operand {
    uint8_t kind;
    uint8_t count;
    uint8_t negate; /* !%p as a source predicate */
    uint8_t padding;
    uint32_t reg;
    int64_t imm;
    uint32_t vec[4];
};

/* Modifier values, by opcode. */
enum { MUL_LO, MUL_HI, MUL_WIDE };
enum { RND_DEFAULT, RND_RN, RND_RZ, RND_RM, RND_RP, RND_RNI, RND_RZI, RND_RMI, RND_RPI };
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS,
       CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU, CMP_NUM, CMP_NAN };
enum { BOOL_NONE, BOOL_AND, BOOL_OR, BOOL_XOR };
enum { ATOM_ADD, ATOM_MIN, ATOM_MAX, ATOM_INC, ATOM_DEC, ATOM_CAS, ATOM_EXCH,
       ATOM_AND, ATOM_OR, ATOM_XOR };
enum { SHFL_UP, SHFL_DOWN, SHFL_BFLY, SHFL_IDX };
enum { VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT };
enum { CLOCK_32, CLOCK_64, CLOCK_GLOBALTIMER, CLOCK_GLOBALTIMER_LO, CLOCK_GLOBALTIMER_HI };
enum { SHF_L_WRAP, SHF_L_CLAMP, SHF_R_WRAP, SHF_R_CLAMP };
/* bar.red's reduction, in ptx_instruction.mode (0: a plain barrier). */
enum { BAR_PLAIN, BAR_RED_POPC, BAR_RED_AND, BAR_RED_OR };
enum { TESTP_FINITE, TESTP_INFINITE, TESTP_NUMBER, TESTP_NOTANUMBER, TESTP_NORMAL,
       TESTP_SUBNORMAL };

/* Flag bits. */
#define F_FTZ 0x01u
#define F_SAT 0x02u
#define F_APPROX 0x04u
#define F_HAS_COUNT 0x08u /* bar with a thread count */
#define F_CC 0x10u        /* add.cc/addc etc: carry out */
#define F_CARRY_IN 0x20u  /* addc/subc */
#define F_NEG_GUARD 0x40u
#define F_BAR_ARRIVE 0x80u

struct ptx_instruction {
    uint8_t op;
    uint8_t type;   /* operation type (destination type for cvt) */
    uint8_t type2;  /* cvt source type; mul.wide/mad.wide source type */
    uint8_t space;
    uint8_t mode;   /* MUL_*, CMP_*, ATOM_*, SHFL_*, VOTE_*, CLOCK_*, SHF_* */
    uint8_t rounding;
    uint8_t flags;
    uint8_t vector; /* ld/st elements (1, 2, 4) */
    uint8_t boolop; /* setp's .and/.or/.xor with a third predicate */
    uint8_t operand_count;
    uint8_t has_pair; /* the first operand is d|p: a second destination follows it */
    uint16_t line;  /* source line, for messages */
    uint32_t guard; /* predicate slot or PTX_NO_REGISTER */
    uint32_t target; /* branch target instruction index */
    struct ptx_operand o[6];
};

/* Value a slot takes at the start of every thread. */
enum ptx_special {
    SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z,
    SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z, SR_NCTAID_X, SR_NCTAID_Y, SR_NCTAID_Z,
    SR_LANEID, SR_WARPID, SR_NWARPID, SR_SMID, SR_NSMID, SR_GRIDID,
    SR_LANEMASK_EQ, SR_LANEMASK_LT, SR_LANEMASK_LE, SR_LANEMASK_GT, SR_LANEMASK_GE,
    SR_DYNAMIC_SMEM_SIZE, SR_TOTAL_SMEM_SIZE, SR_CLUSTERID_X, SR_CLUSTER_CTAID_X,
    SR_CLUSTER_NCTAID_X, SR_CLUSTER_NCTARANK, SR_CLUSTER_CTARANK, SR_ZERO,
    SR_GRID_WORKSPACE_HIGH, SR_GRID_WORKSPACE_LOW, /* %envreg1, %envreg2 */
};

struct ptx_special_slot {
    uint32_t slot;
    uint8_t special;
};

struct ptx_param {
    char *name;
    size_t offset;
    size_t size;
};

/* Device-function calls: the callee's code is appended to each kernel that
 * calls it, with its registers, local memory and call scratch placed after
 * the kernel's own. PTX_MAX_CALL_DEPTH nested calls at most (recursion is
 * refused when decoding). */
#define PTX_MAX_CALL_DEPTH 3
#define PTX_MAX_CALL_ARGUMENTS 16

struct ptx_call_site {
    char *callee;        /* name, until linked */
    unsigned text;       /* the PTX text the call is in, whose private names it sees */
    uint32_t entry;      /* callee's first instruction in the kernel */
    unsigned argument_count;
    /* Per argument: the caller's .param offset, the callee's formal offset,
     * its size; all in the thread's call scratch. */
    uint32_t from[PTX_MAX_CALL_ARGUMENTS], to[PTX_MAX_CALL_ARGUMENTS], size[PTX_MAX_CALL_ARGUMENTS];
    bool has_return;
    uint32_t return_from, return_to, return_size;
};

/* An immediate that is the address of an .extern .global/.const variable
 * (plus an offset), known only once every text of a linked module is read. */
struct ptx_symbol_fixup {
    uint32_t instruction;
    uint8_t operand;
    size_t variable; /* module variable index of the declaration */
};

/* An immediate that is an offset in the thread's local memory or call
 * scratch, rebased when the function is appended to a kernel. */
struct ptx_offset_fixup {
    uint32_t instruction;
    uint8_t operand;
    uint8_t space; /* S_LOCAL or S_CALL_PARAM */
};

struct ptx_function {
    char *name;
    bool entry;
    bool visible;  /* .visible or .weak: other texts of a linked module see it */
    bool weak;     /* .weak or .common: a .visible definition elsewhere wins */
    unsigned text; /* index of its PTX text in a linked module (0 alone) */
    struct ptx_symbol_fixup *symbol_fixups;
    unsigned symbol_fixup_count;
    struct ptx_call_site *call_sites;
    unsigned call_site_count;
    struct ptx_offset_fixup *offset_fixups;
    unsigned offset_fixup_count;
    struct ptx_param *returns; /* a device function's return values (.func) */
    unsigned return_count;
    bool uses_shared;          /* a device function touching .shared */
    uint32_t own_code_count;   /* a kernel's instructions before appended callees */
    struct ptx_param *params;
    unsigned param_count;
    size_t param_bytes;
    struct ptx_instruction *code;
    uint32_t code_count;
    uint32_t register_count;
    struct ptx_special_slot *specials;
    unsigned special_count;
    size_t local_bytes;       /* per thread */
    size_t call_param_bytes;  /* per thread */
    size_t static_shared_bytes;
    unsigned max_threads;
    char *decode_error; /* why this kernel cannot run, or NULL */
};

struct ptx_variable {
    char *name;
    enum ptx_space space;
    size_t size;
    size_t alignment;
    bool is_extern;
    bool visible;  /* .visible or .weak */
    bool weak;     /* .weak or .common */
    unsigned text; /* index of its PTX text in a linked module (0 alone) */
    uint64_t address; /* .global/.const: device address (a linked extern: its definition's) */
};

struct ptx_module {
    struct ptx_variable *variables;
    size_t variable_count;
    struct ptx_function *functions; /* kernels */
    size_t function_count;
    struct ptx_function *device_functions; /* .func with bodies */
    size_t device_function_count;
};

extern atomic_ullong ptx_executed_thread_instructions;

/* Device printf (ptx_printf.c): formats `format` with the argument buffer
 * laid out as nvcc's vprintf calls pass it, and writes it to stdout. Returns
 * what CUDA's printf does: the number of arguments parsed (0 for none), or
 * -2 when formatting fails. */
int ptx_vprintf(const char *format, const unsigned char *arguments);

#endif
