#ifndef PINPROXY_PP_H2MEM_H
#define PINPROXY_PP_H2MEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The allocator of one nghttp2 session (its nghttp2_mem functions, with a
 * pp_h2mem as mem_user_data). The session's outbound frame buffers (exactly
 * PP_H2MEM_FRAME_LENGTH bytes, NGHTTP2_FRAMEBUF_CHUNKLEN) get mappings of
 * their own so that an idle session can hand their pages back
 * (pp_h2mem_release_idle). Small blocks (streams, outbound items, decoded
 * field texts, copied field lists: up to PP_H2MEM_POOLED_MAX bytes) come from
 * the C library once and then go round a free list of the session's own, by
 * size class, so that a stream's allocations reuse the last stream's; the list
 * keeps at most PP_H2MEM_POOL_BYTES and is emptied when the session falls idle
 * or goes (pp_h2mem_destroy). In C because nghttp2 allocates and frees ~17
 * times per relayed request: the same in Swift closures cost ~1,300
 * instructions a request. */

enum {
    PP_H2MEM_FRAME_LENGTH = 9 + 1 + 16384,
    /* nghttp2 chains at most 5 frame buffers (NGHTTP2_FRAMEBUF_MAX_NUM); more
     * would simply come from the heap and never be recognised. */
    PP_H2MEM_MAX_FRAMES = 8,
    /* Size classes of the free list: multiples of PP_H2MEM_CLASS_BYTES. */
    PP_H2MEM_CLASS_BYTES = 32,
    PP_H2MEM_POOLED_MAX = 1024,
    PP_H2MEM_CLASSES = PP_H2MEM_POOLED_MAX / PP_H2MEM_CLASS_BYTES,
    /* Bytes the free list may hold. */
    PP_H2MEM_POOL_BYTES = 32 * 1024
};

typedef struct {
    void *frames[PP_H2MEM_MAX_FRAMES];
    int count;
    /* The frame buffers' pages were handed back and not written since. */
    int released;
    /* Free blocks by size class, each list linked through the blocks. */
    void *pool[PP_H2MEM_CLASSES];
    /* Bytes held by the free lists (their classes' sizes). */
    size_t pooled;
} pp_h2mem;

void *pp_h2mem_malloc(size_t size, void *mem_user_data);
void pp_h2mem_free(void *pointer, void *mem_user_data);
void *pp_h2mem_calloc(size_t count, size_t size, void *mem_user_data);
void *pp_h2mem_realloc(void *pointer, size_t size, void *mem_user_data);

/* Frees the blocks the free lists hold; after the session is deleted. */
void pp_h2mem_destroy(pp_h2mem *memory);
/* Bytes the free lists hold (for tests). */
size_t pp_h2mem_pooled(const pp_h2mem *memory);

/* Bytes mapped per frame buffer: whole pages. */
size_t pp_h2mem_frame_allocation(void);
/* Frees the free lists' blocks and hands the frame buffers' pages back
 * (MADV_DONTNEED) unless they already were and nothing was written since;
 * whether it released anything. */
int pp_h2mem_release_idle(pp_h2mem *memory);
/* The session serialised frames: its pages are in use again. */
void pp_h2mem_note_output(pp_h2mem *memory);
/* The frame buffer at index (below memory->count). */
void *pp_h2mem_frame(const pp_h2mem *memory, int index);

#ifdef __cplusplus
}
#endif

#endif
