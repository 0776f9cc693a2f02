// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of iSCSI,
// ext4 metadata and LevelDB/RocksDB blocks. The CPU computes it with one instruction per 8
// bytes on x86-64 (SSE 4.2 `crc32`) and ARMv8 (`crc32cx`); elsewhere a slice-by-1 table.
#include "CStowageShims.h"

#include <string.h>

static uint32_t stowage_crc32c_table[256];
static int stowage_crc32c_table_ready;

static void stowage_crc32c_make_table(void) {
    for (uint32_t index = 0; index < 256; index++) {
        uint32_t crc = index;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        stowage_crc32c_table[index] = crc;
    }
    __atomic_store_n(&stowage_crc32c_table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t stowage_crc32c_software(uint32_t crc, const void *bytes, size_t count) {
    if (!__atomic_load_n(&stowage_crc32c_table_ready, __ATOMIC_ACQUIRE)) stowage_crc32c_make_table();
    const uint8_t *p = bytes;
    crc = ~crc;
    while (count--) crc = stowage_crc32c_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <pthread.h>

// One `crc32` instruction has a latency of three cycles but the CPU can start one per cycle, so
// three independent streams over adjacent blocks run three times as fast. Their CRCs are then
// joined: shifting a CRC past N zero bytes is a linear map over GF(2), tabulated once per block
// size (the method of Intel's "Fast CRC Computation for iSCSI Polynomial Using CRC32
// Instruction" and of Mark Adler's crc32c.c).
enum { STOWAGE_CRC_LONG = 8192, STOWAGE_CRC_SHORT = 256 };
static uint32_t stowage_crc_long_shift[4][256];
static uint32_t stowage_crc_short_shift[4][256];
static pthread_once_t stowage_crc_shift_once = PTHREAD_ONCE_INIT;

// The 32x32 bit matrix `matrix` (one column per word) times the vector `vector`, over GF(2).
static uint32_t stowage_gf2_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    for (int column = 0; vector != 0; column++, vector >>= 1) {
        if (vector & 1) sum ^= matrix[column];
    }
    return sum;
}

static void stowage_gf2_square(uint32_t *square, const uint32_t *matrix) {
    for (int column = 0; column < 32; column++) square[column] = stowage_gf2_times(matrix, matrix[column]);
}

// The operator that appends `bytes` zero bytes to a (pre- and post-conditioned) CRC register.
static void stowage_crc_zeros_operator(uint32_t *result, size_t bytes) {
    uint32_t one_bit[32], power[32], scratch[32];
    one_bit[0] = 0x82F63B78u;  // shifting the register by one zero bit
    for (int column = 1; column < 32; column++) one_bit[column] = 1u << (column - 1);
    stowage_gf2_square(scratch, one_bit);  // 2 bits
    stowage_gf2_square(power, scratch);    // 4 bits
    stowage_gf2_square(scratch, power);    // 8 bits: one byte
    memcpy(power, scratch, sizeof power);
    // result = power^bytes by squaring.
    int started = 0;
    while (bytes != 0) {
        if (bytes & 1) {
            if (!started) {
                memcpy(result, power, sizeof power);
                started = 1;
            } else {
                for (int column = 0; column < 32; column++) scratch[column] = stowage_gf2_times(power, result[column]);
                memcpy(result, scratch, sizeof scratch);
            }
        }
        bytes >>= 1;
        if (bytes != 0) {
            stowage_gf2_square(scratch, power);
            memcpy(power, scratch, sizeof scratch);
        }
    }
}

static void stowage_crc_shift_table(uint32_t table[4][256], size_t bytes) {
    uint32_t op[32];
    stowage_crc_zeros_operator(op, bytes);
    for (uint32_t value = 0; value < 256; value++) {
        for (int lane = 0; lane < 4; lane++) table[lane][value] = stowage_gf2_times(op, value << (8 * lane));
    }
}

static void stowage_crc_make_shift_tables(void) {
    stowage_crc_shift_table(stowage_crc_long_shift, STOWAGE_CRC_LONG);
    stowage_crc_shift_table(stowage_crc_short_shift, STOWAGE_CRC_SHORT);
}

static inline uint32_t stowage_crc_shift(uint32_t table[4][256], uint32_t crc) {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^ table[3][crc >> 24];
}

static inline uint64_t stowage_load64(const uint8_t *p) {
    uint64_t word;
    memcpy(&word, p, 8);  // unaligned-safe
    return word;
}

// One round of three streams over three adjacent blocks of `block` bytes at `*p`, joined into
// the register; advances `*p` past them.
__attribute__((target("sse4.2"))) static inline uint64_t stowage_crc_three_blocks(
    uint64_t crc0, const uint8_t **p, size_t block, uint32_t shift[4][256]
) {
    const uint8_t *start = *p;
    uint64_t crc1 = 0, crc2 = 0;
    for (const uint8_t *q = start, *end = start + block; q < end; q += 8) {
        crc0 = _mm_crc32_u64(crc0, stowage_load64(q));
        crc1 = _mm_crc32_u64(crc1, stowage_load64(q + block));
        crc2 = _mm_crc32_u64(crc2, stowage_load64(q + 2 * block));
    }
    crc0 = stowage_crc_shift(shift, (uint32_t)crc0) ^ (uint32_t)crc1;
    crc0 = stowage_crc_shift(shift, (uint32_t)crc0) ^ (uint32_t)crc2;
    *p = start + 3 * block;
    return crc0;
}

__attribute__((target("sse4.2"))) static uint32_t stowage_crc32c_sse42(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    uint64_t crc0 = ~crc & 0xFFFFFFFFu;
    for (; count >= 3 * STOWAGE_CRC_LONG; count -= 3 * STOWAGE_CRC_LONG) {
        crc0 = stowage_crc_three_blocks(crc0, &p, STOWAGE_CRC_LONG, stowage_crc_long_shift);
    }
    for (; count >= 3 * STOWAGE_CRC_SHORT; count -= 3 * STOWAGE_CRC_SHORT) {
        crc0 = stowage_crc_three_blocks(crc0, &p, STOWAGE_CRC_SHORT, stowage_crc_short_shift);
    }
    for (; count >= 8; count -= 8, p += 8) crc0 = _mm_crc32_u64(crc0, stowage_load64(p));
    uint32_t rest = (uint32_t)crc0;
    while (count--) rest = _mm_crc32_u8(rest, *p++);
    return ~rest;
}

int stowage_crc32c_is_hardware(void) { return __builtin_cpu_supports("sse4.2"); }

uint32_t stowage_crc32c(uint32_t crc, const void *bytes, size_t count) {
    static int hardware = -1;
    if (hardware < 0) {
        pthread_once(&stowage_crc_shift_once, stowage_crc_make_shift_tables);
        hardware = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return hardware ? stowage_crc32c_sse42(crc, bytes, count) : stowage_crc32c_software(crc, bytes, count);
}

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>

int stowage_crc32c_is_hardware(void) { return 1; }

uint32_t stowage_crc32c(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    crc = ~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        count -= 8;
    }
    while (count--) crc = __crc32cb(crc, *p++);
    return ~crc;
}

#else

int stowage_crc32c_is_hardware(void) { return 0; }

uint32_t stowage_crc32c(uint32_t crc, const void *bytes, size_t count) {
    return stowage_crc32c_software(crc, bytes, count);
}

#endif
