#include "pp_h2mem.h"
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

void *pp_h2mem_malloc(size_t size, void *mem_user_data) {
    pp_h2mem *memory = mem_user_data;
    if (size != PP_H2MEM_FRAME_LENGTH || memory->count == PP_H2MEM_MAX_FRAMES) return malloc(size);
    void *buffer = mmap(NULL, pp_h2mem_frame_allocation(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer == MAP_FAILED) return NULL;
    memory->frames[memory->count++] = buffer;
    return buffer;
}

void pp_h2mem_free(void *pointer, void *mem_user_data) {
    if (pointer == NULL) return;
    pp_h2mem *memory = mem_user_data;
    int index = frame_index(memory, pointer);
    if (index < 0) {
        free(pointer);
        return;
    }
    munmap(pointer, pp_h2mem_frame_allocation());
    /* Kept in the order they were allocated. */
    memmove(&memory->frames[index], &memory->frames[index + 1], (size_t)(memory->count - index - 1) * sizeof(void *));
    memory->count--;
}

void *pp_h2mem_calloc(size_t count, size_t size, void *mem_user_data) {
    (void)mem_user_data;
    return calloc(count, size);
}

void *pp_h2mem_realloc(void *pointer, size_t size, void *mem_user_data) {
    if (pointer == NULL) return pp_h2mem_malloc(size, mem_user_data);
    pp_h2mem *memory = mem_user_data;
    if (frame_index(memory, pointer) < 0) return realloc(pointer, size);
    void *moved = pp_h2mem_malloc(size, mem_user_data);
    if (moved == NULL) return NULL;
    memcpy(moved, pointer, size < PP_H2MEM_FRAME_LENGTH ? size : PP_H2MEM_FRAME_LENGTH);
    pp_h2mem_free(pointer, mem_user_data);
    return moved;
}

int pp_h2mem_release_idle(pp_h2mem *memory) {
    if (memory->released || memory->count == 0) return 0;
    for (int i = 0; i < memory->count; i++) madvise(memory->frames[i], pp_h2mem_frame_allocation(), MADV_DONTNEED);
    memory->released = 1;
    return 1;
}

void pp_h2mem_note_output(pp_h2mem *memory) { memory->released = 0; }

void *pp_h2mem_frame(const pp_h2mem *memory, int index) {
    return index >= 0 && index < memory->count ? memory->frames[index] : NULL;
}
