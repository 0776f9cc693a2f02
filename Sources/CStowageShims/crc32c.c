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

__attribute__((target("sse4.2"))) static uint32_t stowage_crc32c_sse42(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    uint64_t value = ~crc & 0xFFFFFFFFu;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);  // unaligned-safe
        value = _mm_crc32_u64(value, word);
        p += 8;
        count -= 8;
    }
    uint32_t rest = (uint32_t)value;
    while (count--) rest = _mm_crc32_u8(rest, *p++);
    return ~rest;
}

int stowage_crc32c_is_hardware(void) { return __builtin_cpu_supports("sse4.2"); }

uint32_t stowage_crc32c(uint32_t crc, const void *bytes, size_t count) {
    static int hardware = -1;
    if (hardware < 0) hardware = __builtin_cpu_supports("sse4.2") ? 1 : 0;
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
