#include "pp_h2mem.h"
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

size_t pp_h2mem_frame_allocation(void) {
    long page = sysconf(_SC_PAGESIZE);
    if (page < 4096) page = 4096;
    return ((size_t)PP_H2MEM_FRAME_LENGTH + (size_t)page - 1) / (size_t)page * (size_t)page;
}

static int frame_index(const pp_h2mem *memory, const void *pointer) {
    for (int i = 0; i < memory->count; i++) {
        if (memory->frames[i] == pointer) return i;
    }
    return -1;
}

/* A block's size class comes from the C library's own record of its size
 * (malloc_usable_size), so that a block carries no header of ours: a small
 * block is taken as malloc(class * PP_H2MEM_CLASS_BYTES), whose usable size
 * divided by the class size gives the class back (or more, for a block taken
 * larger, which then serves a smaller class: never less room than its class).
 * 0: larger than the classes, never kept. */
static size_t class_of(void *pointer) {
    size_t class_plus_one = malloc_usable_size(pointer) / PP_H2MEM_CLASS_BYTES;
    return class_plus_one > PP_H2MEM_CLASSES ? 0 : class_plus_one;
}

static size_t class_bytes(size_t class_plus_one) { return class_plus_one * PP_H2MEM_CLASS_BYTES; }

void *pp_h2mem_malloc(size_t size, void *mem_user_data) {
    pp_h2mem *memory = mem_user_data;
    if (size == PP_H2MEM_FRAME_LENGTH && memory->count < PP_H2MEM_MAX_FRAMES) {
        void *buffer = mmap(NULL, pp_h2mem_frame_allocation(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buffer == MAP_FAILED) return NULL;
        memory->frames[memory->count++] = buffer;
        return buffer;
    }
    if (size > PP_H2MEM_POOLED_MAX) return malloc(size);
    size_t class_plus_one = size == 0 ? 1 : (size + PP_H2MEM_CLASS_BYTES - 1) / PP_H2MEM_CLASS_BYTES;
    void *block = memory->pool[class_plus_one - 1];
    if (block == NULL) return malloc(class_bytes(class_plus_one));
    memory->pool[class_plus_one - 1] = *(void **)block;
    memory->pooled -= class_bytes(class_plus_one);
    return block;
}

void pp_h2mem_free(void *pointer, void *mem_user_data) {
    if (pointer == NULL) return;
    pp_h2mem *memory = mem_user_data;
    int index = frame_index(memory, pointer);
    if (index >= 0) {
        munmap(pointer, pp_h2mem_frame_allocation());
        /* Kept in the order they were allocated. */
        memmove(&memory->frames[index], &memory->frames[index + 1], (size_t)(memory->count - index - 1) * sizeof(void *));
        memory->count--;
        return;
    }
    size_t class_plus_one = class_of(pointer);
    if (class_plus_one == 0 || memory->pooled + class_bytes(class_plus_one) > PP_H2MEM_POOL_BYTES) {
        free(pointer);
        return;
    }
    *(void **)pointer = memory->pool[class_plus_one - 1];
    memory->pool[class_plus_one - 1] = pointer;
    memory->pooled += class_bytes(class_plus_one);
}

void *pp_h2mem_calloc(size_t count, size_t size, void *mem_user_data) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *block = pp_h2mem_malloc(count * size, mem_user_data);
    if (block != NULL) memset(block, 0, count * size);
    return block;
}

void *pp_h2mem_realloc(void *pointer, size_t size, void *mem_user_data) {
    if (pointer == NULL) return pp_h2mem_malloc(size, mem_user_data);
    pp_h2mem *memory = mem_user_data;
    size_t held;
    if (frame_index(memory, pointer) >= 0) {
        held = PP_H2MEM_FRAME_LENGTH;
    } else {
        /* A heap block with room enough stays; a larger block that is no
         * frame buffer grows in place where the C library can. */
        held = malloc_usable_size(pointer);
        if (size <= held) return pointer;
        if (size > PP_H2MEM_POOLED_MAX && size != PP_H2MEM_FRAME_LENGTH) return realloc(pointer, size);
    }
    void *moved = pp_h2mem_malloc(size, mem_user_data);
    if (moved == NULL) return NULL;
    memcpy(moved, pointer, size < held ? size : held);
    pp_h2mem_free(pointer, mem_user_data);
    return moved;
}

/* Frees the free lists' blocks; whether there were any. */
static int empty_pool(pp_h2mem *memory) {
    int any = 0;
    for (int i = 0; i < PP_H2MEM_CLASSES; i++) {
        void *block = memory->pool[i];
        while (block != NULL) {
            void *next = *(void **)block;
            free(block);
            block = next;
            any = 1;
        }
        memory->pool[i] = NULL;
    }
    memory->pooled = 0;
    return any;
}

void pp_h2mem_destroy(pp_h2mem *memory) { (void)empty_pool(memory); }

size_t pp_h2mem_pooled(const pp_h2mem *memory) { return memory->pooled; }

int pp_h2mem_release_idle(pp_h2mem *memory) {
    int released = empty_pool(memory);
    if (memory->released || memory->count == 0) return released;
    for (int i = 0; i < memory->count; i++) madvise(memory->frames[i], pp_h2mem_frame_allocation(), MADV_DONTNEED);
    memory->released = 1;
    return 1;
}

void pp_h2mem_note_output(pp_h2mem *memory) { memory->released = 0; }

void *pp_h2mem_frame(const pp_h2mem *memory, int index) {
    return index >= 0 && index < memory->count ? memory->frames[index] : NULL;
}
