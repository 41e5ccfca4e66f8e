#ifndef PINPROXY_PP_H2MEM_H
#define PINPROXY_PP_H2MEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The allocator of one nghttp2 session (its nghttp2_mem functions, with a
 * pp_h2mem as mem_user_data): the C library's own, except for the session's
 * outbound frame buffers (exactly PP_H2MEM_FRAME_LENGTH bytes,
 * NGHTTP2_FRAMEBUF_CHUNKLEN), which get mappings of their own so that an idle
 * session can hand their pages back (pp_h2mem_release_idle). In C because
 * nghttp2 allocates and frees ~40 times per relayed request: the same in
 * Swift closures cost ~1,300 instructions a request. */

enum {
    PP_H2MEM_FRAME_LENGTH = 9 + 1 + 16384,
    /* nghttp2 chains at most 5 frame buffers (NGHTTP2_FRAMEBUF_MAX_NUM); more
     * would simply come from the heap and never be recognised. */
    PP_H2MEM_MAX_FRAMES = 8
};

typedef struct {
    void *frames[PP_H2MEM_MAX_FRAMES];
    int count;
    /* The frame buffers' pages were handed back and not written since. */
    int released;
} pp_h2mem;

void *pp_h2mem_malloc(size_t size, void *mem_user_data);
void pp_h2mem_free(void *pointer, void *mem_user_data);
void *pp_h2mem_calloc(size_t count, size_t size, void *mem_user_data);
void *pp_h2mem_realloc(void *pointer, size_t size, void *mem_user_data);

/* Bytes mapped per frame buffer: whole pages. */
size_t pp_h2mem_frame_allocation(void);
/* Hands the frame buffers' pages back (MADV_DONTNEED) unless they already
 * were and nothing was written since; whether it did. */
int pp_h2mem_release_idle(pp_h2mem *memory);
/* The session serialised frames: its pages are in use again. */
void pp_h2mem_note_output(pp_h2mem *memory);
/* The frame buffer at index (below memory->count). */
void *pp_h2mem_frame(const pp_h2mem *memory, int index);

#ifdef __cplusplus
}
#endif

#endif
