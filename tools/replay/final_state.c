#include "final_state.h"

#include <stdlib.h>
#include <string.h>

#include "growable_array.h"

struct capture {
    struct replay_final_state *state;
    size_t segment_capacity;
    size_t block_capacity;
    /* Where each segment's blocks start in state->blocks, which may still
     * move while segments arrive. */
    size_t *first_block;
    size_t first_block_capacity;
    bool out_of_memory;
};

static void copy_segment(void *context, const struct gpucache_segment_info *segment)
{
    struct capture *capture = context;
    struct replay_final_state *state = capture->state;
    if (capture->out_of_memory ||
        !growable_array_reserve((void **)&state->segments, &capture->segment_capacity,
                                state->segment_count + 1, sizeof *state->segments) ||
        !growable_array_reserve((void **)&capture->first_block, &capture->first_block_capacity,
                                state->segment_count + 1, sizeof *capture->first_block) ||
        !growable_array_reserve((void **)&state->blocks, &capture->block_capacity,
                                state->block_count + segment->block_count + 1,
                                sizeof *state->blocks)) {
        capture->out_of_memory = true;
        return;
    }
    capture->first_block[state->segment_count] = state->block_count;
    state->segments[state->segment_count++] = *segment;
    memcpy(state->blocks + state->block_count, segment->blocks,
           segment->block_count * sizeof *segment->blocks);
    state->block_count += segment->block_count;
}

bool replay_final_state_capture(struct gpucache_allocator *allocator,
                                struct replay_final_state *state)
{
    *state = (struct replay_final_state){0};
    struct capture capture = {.state = state};
    bool visited = gpucache_allocator_visit_segments(allocator, copy_segment, &capture);
    if (!visited || capture.out_of_memory) {
        free(capture.first_block);
        replay_final_state_release(state);
        return false;
    }
    for (size_t index = 0; index < state->segment_count; index++)
        state->segments[index].blocks = state->blocks + capture.first_block[index];
    free(capture.first_block);
    return true;
}

void replay_final_state_release(struct replay_final_state *state)
{
    free(state->segments);
    free(state->blocks);
    *state = (struct replay_final_state){0};
}

uint64_t replay_final_state_largest_free_block(const struct replay_final_state *state)
{
    uint64_t largest = 0;
    for (size_t index = 0; index < state->block_count; index++)
        if (state->blocks[index].state == GPUCACHE_BLOCK_INACTIVE &&
            state->blocks[index].size > largest)
            largest = state->blocks[index].size;
    return largest;
}
