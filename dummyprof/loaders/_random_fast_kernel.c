/* random-fast's CPU kernel: the stream of loaders/random_fast.py in one pass per word.
 *
 * Why C: the numpy path makes four or five passes over its lane arrays per output word and is
 * compute-bound (about a fifth of a memset). Here each word is one multiply, a shift, an xor and the
 * dtype's masks, stored straight into the tensor, so the fill runs at memory speed.
 *
 * The bytes are the specification's (random_fast.reference_word), exactly those of the numpy path:
 * chunk c seeds LANES lanes with SplitMix64 outputs c*LANES+1 .. c*LANES+LANES of the seed's stream
 * (made odd); step s multiplies every lane by MULTIPLIER and writes x ^ (x >> 32), masked, as word
 * c*LANES*STEPS + s*LANES + lane, little-endian. Callers hand out whole chunks to threads; the GIL is
 * released while a chunk is written, so threads run on every core.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define LANES 16384u
#define STEPS 32u
#define WORD_BYTES 8u
#define CHUNK_BYTES ((uint64_t)LANES * STEPS * WORD_BYTES)

static const uint64_t GAMMA = 0x9E3779B97F4A7C15ull;
static const uint64_t MIX1 = 0xBF58476D1CE4E5B9ull;
static const uint64_t MIX2 = 0x94D049BB133111EBull;
static const uint64_t MULTIPLIER = 0xF1357AEA2E62A9C5ull;

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * MIX1;
    z = (z ^ (z >> 27)) * MIX2;
    return z ^ (z >> 31);
}

/* AVX2 where the CPU has it, chosen at load time (GNU ifunc); the same arithmetic either way. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
step_words(uint64_t *restrict x, uint8_t *restrict out, size_t n, uint64_t and_word, uint64_t or_word) {
    for (size_t lane = 0; lane < n; lane++) {
        uint64_t v = x[lane] * MULTIPLIER;
        x[lane] = v;
        uint64_t w = ((v ^ (v >> 32)) & and_word) | or_word;
        memcpy(out + (size_t)WORD_BYTES * lane, &w, WORD_BYTES); /* unaligned-safe, little-endian */
    }
}

static void fill_chunk(uint8_t *dst, uint64_t total, uint64_t chunk, uint64_t key, uint64_t and_word,
                       uint64_t or_word, uint64_t *x) {
    uint64_t start = chunk * CHUNK_BYTES;
    uint64_t words = (total - start + WORD_BYTES - 1) / WORD_BYTES; /* the last one may be partial */
    size_t lanes = words < LANES ? (size_t)words : LANES;
    uint64_t base = key + (chunk * LANES + 1) * GAMMA;
    for (size_t lane = 0; lane < lanes; lane++) x[lane] = mix64(base + (uint64_t)lane * GAMMA) | 1u;
    for (uint64_t step = 0; step < STEPS; step++) {
        uint64_t w0 = step * LANES;
        if (w0 >= words) break;
        size_t n = words - w0 < LANES ? (size_t)(words - w0) : LANES;
        uint64_t b0 = start + w0 * WORD_BYTES;
        size_t whole = b0 + (uint64_t)n * WORD_BYTES > total ? n - 1 : n;
        step_words(x, dst + b0, whole, and_word, or_word);
        if (whole < n) { /* the tensor ends inside this word: write the bytes that exist */
            uint64_t v = x[whole] * MULTIPLIER;
            uint64_t w = ((v ^ (v >> 32)) & and_word) | or_word;
            uint64_t at = b0 + (uint64_t)whole * WORD_BYTES;
            memcpy(dst + at, &w, (size_t)(total - at));
        }
    }
}

static int little_endian(void) {
    uint16_t probe = 1;
    return *(uint8_t *)&probe == 1;
}

static PyObject *fill_chunks(PyObject *self, PyObject *args) {
    unsigned long long address, total, first, end, key, and_word, or_word, lanes_address, lanes_words;
    (void)self;
    if (!PyArg_ParseTuple(args, "KKKKKKKKK:fill_chunks", &address, &total, &first, &end, &key, &and_word, &or_word,
                          &lanes_address, &lanes_words))
        return NULL;
    if (address == 0 || end > (total + CHUNK_BYTES - 1) / CHUNK_BYTES || first > end) {
        PyErr_SetString(PyExc_ValueError, "fill_chunks: chunk range outside the buffer");
        return NULL;
    }
    if (first == end) Py_RETURN_NONE;
    uint64_t words = (total - first * CHUNK_BYTES + WORD_BYTES - 1) / WORD_BYTES;
    if (lanes_address == 0 || lanes_words < (words < LANES ? words : LANES)) {
        PyErr_SetString(PyExc_ValueError, "fill_chunks: lane array too small for these chunks");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (uint64_t c = first; c < end; c++)
        fill_chunk((uint8_t *)(uintptr_t)address, total, c, key, and_word, or_word, (uint64_t *)(uintptr_t)lanes_address);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fill_chunks", fill_chunks, METH_VARARGS,
     "fill_chunks(address, total_bytes, first_chunk, end_chunk, key, and_word, or_word, lanes_address, lanes_words): "
     "write chunks [first_chunk, end_chunk) of the random-fast stream into the total_bytes bytes at address, "
     "using the caller's lane array (uint64, at least min(LANES, words left) long), with the GIL released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_random_fast_kernel", "random-fast's one-pass CPU kernel (see random_fast.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__random_fast_kernel(void) {
    if (!little_endian()) {
        PyErr_SetString(PyExc_ImportError, "random-fast's kernel writes little-endian words only");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LANES", LANES) < 0 || PyModule_AddIntConstant(m, "STEPS", STEPS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
