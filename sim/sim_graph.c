/* Graphs: what stream capture recorded, instantiated and launched.
 *
 * A graph is its nodes in capture order, each a copy of the work item the
 * capturing stream was given. Capture order respects every dependency the
 * capture saw (a node is recorded after everything it waited for), so it is
 * a topological order of the graph CUDA would build. A launch queues a copy
 * of every node, in that order, on the launch stream through the ordinary
 * stream path: ordering with the work around it, events and the race
 * detector all come from the stream model. For a capture that forked into
 * several streams this runs branches one after another that a GPU could run
 * concurrently: a conservative linearization, which can hide a race between
 * two branches of one graph but never invents one.
 *
 * Allocations made during capture (cuMemAllocAsync) are reserved address
 * ranges owned by the graph. Instantiation maps and charges real memory at
 * those addresses, and destroying the instantiation gives it back; as CUDA
 * requires, such a graph has at most one instantiation at a time. Captured
 * frees are no-op nodes. */
#include "sim_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

#define KNOWN_INSTANTIATE_FLAGS                                                                    \
    ((unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |                        \
                          CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |                                     \
                          CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |                              \
                          CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))

static void node_free(struct sim_graph_node *node)
{
    if (node->work.kind == SIM_WORK_KERNEL)
        sim_kernel_discard(node->work.u.kernel.launch);
    free(node);
}

static void nodes_free(struct sim_graph_node **nodes, size_t count)
{
    for (size_t i = 0; i < count; i++)
        node_free(nodes[i]);
    free(nodes);
}

/* The copy a graph keeps, or one launch queues: a kernel gets its own
 * launch so that neither outlives the other's parameters. */
static bool copy_work(const struct sim_work *from, struct sim_work *to)
{
    *to = *from;
    to->sequence = 0;
    if (from->kind == SIM_WORK_KERNEL) {
        to->u.kernel.launch = sim_kernel_clone(from->u.kernel.launch);
        return to->u.kernel.launch != NULL;
    }
    return true;
}

CUresult sim_capture_record(struct sim_capture *capture, const struct sim_work *work)
{
    struct sim_graph *graph = capture->graph;
    if (graph->node_count == graph->node_capacity) {
        size_t capacity = graph->node_capacity ? 2 * graph->node_capacity : 16;
        struct sim_graph_node **nodes = realloc(graph->nodes, capacity * sizeof *nodes);
        if (nodes == NULL)
            return CUDA_ERROR_OUT_OF_MEMORY;
        graph->nodes = nodes;
        graph->node_capacity = capacity;
    }
    struct sim_graph_node *node = malloc(sizeof *node);
    if (node == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* The submitted item's launch (if any) passes to the node. */
    node->work = *work;
    node->work.sequence = 0;
    graph->nodes[graph->node_count++] = node;
    return CUDA_SUCCESS;
}

bool sim_captured_range_usable(const struct sim_range *range)
{
    return range->graph_exec != NULL || (range->graph != NULL && range->graph->capturing);
}

/* An allocation whose memory an instantiation maps outlives its graph: the
 * instantiation frees it. */
static bool release_graph_allocation(struct sim_range *range, void *graph)
{
    if (range->kind != SIM_RANGE_CAPTURED || range->graph != graph)
        return true;
    if (range->graph_exec != NULL)
        range->graph = NULL;
    else
        sim_range_destroy(range);
    return true;
}

void sim_graph_destroy(struct sim_graph *graph)
{
    sim_range_foreach(release_graph_allocation, graph);
    if (graph->memory_exec != NULL)
        graph->memory_exec->graph = NULL;
    if (graph->handle.kind == SIM_HANDLE_GRAPH)
        sim_handle_unregister(&graph->handle);
    nodes_free(graph->nodes, graph->node_count);
    free(graph);
}

/* ---- captured allocations ----------------------------------------------- */

struct allocation_scan {
    struct sim_graph *graph;
    struct sim_graph_exec *exec;
    bool found;
    bool failed;
};

static bool find_allocation(struct sim_range *range, void *argument)
{
    struct allocation_scan *scan = argument;
    if (range->kind == SIM_RANGE_CAPTURED && range->graph == scan->graph) {
        scan->found = true;
        return false;
    }
    return true;
}

static bool map_allocation(struct sim_range *range, void *argument)
{
    struct allocation_scan *scan = argument;
    if (range->kind != SIM_RANGE_CAPTURED || range->graph != scan->graph ||
        range->graph_exec != NULL)
        return true;
    if (!sim_physical_charge(range->device, range->mapping_size)) {
        scan->failed = true;
        return false;
    }
    if (mprotect(range->mapping, range->mapping_size, PROT_READ | PROT_WRITE) != 0) {
        sim_physical_release(range->device, range->mapping_size);
        scan->failed = true;
        return false;
    }
    range->physical = range->mapping_size;
    range->graph_exec = scan->exec;
    sim_racecheck_forget(range->base, range->size);
    return true;
}

/* Back to a bare reservation (the graph may be instantiated again), or gone
 * with the instantiation when the graph already is. */
static bool unmap_allocation(struct sim_range *range, void *exec)
{
    if (range->kind != SIM_RANGE_CAPTURED || range->graph_exec != exec)
        return true;
    if (range->graph == NULL) {
        sim_range_destroy(range);
        return true;
    }
    madvise(range->mapping, range->mapping_size, MADV_DONTNEED);
    mprotect(range->mapping, range->mapping_size, PROT_NONE);
    sim_physical_release(range->device, range->physical);
    range->physical = 0;
    range->graph_exec = NULL;
    sim_racecheck_forget(range->base, range->size);
    return true;
}

/* ---- entry points ------------------------------------------------------- */

SIM_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    SIM_ENTER("cuGraphCreate");
    if (phGraph == NULL || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_graph *graph = calloc(1, sizeof *graph);
    if (graph == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_lock();
    sim_handle_register(&graph->handle, SIM_HANDLE_GRAPH);
    sim_unlock();
    *phGraph = (CUgraph)graph;
    return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    SIM_ENTER("cuGraphDestroy");
    sim_lock();
    bool live = sim_handle_is_live(hGraph, SIM_HANDLE_GRAPH);
    if (live)
        sim_graph_destroy((struct sim_graph *)hGraph);
    sim_unlock();
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Node handles are the graph's node records; nothing here accepts them
 * back yet, but their number and identity are what programs inspect. */
SIM_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    SIM_ENTER("cuGraphGetNodes");
    if (hGraph == NULL || numNodes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    if (!sim_handle_is_live(hGraph, SIM_HANDLE_GRAPH)) {
        sim_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct sim_graph *graph = (struct sim_graph *)hGraph;
    if (nodes != NULL) {
        for (size_t i = 0; i < *numNodes; i++)
            nodes[i] = i < graph->node_count ? (CUgraphNode)graph->nodes[i] : NULL;
    }
    *numNodes = graph->node_count;
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    if (phGraphExec == NULL || hGraph == NULL || (flags & ~KNOWN_INSTANTIATE_FLAGS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_context *context;
    CUresult result = sim_require_context(&context);
    if (result != CUDA_SUCCESS)
        return result;
    struct sim_graph_exec *exec = calloc(1, sizeof *exec);
    if (exec == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    exec->context = context;
    sim_lock();
    if (!sim_handle_is_live(hGraph, SIM_HANDLE_GRAPH)) {
        sim_unlock();
        free(exec);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct sim_graph *graph = (struct sim_graph *)hGraph;
    struct allocation_scan scan = {.graph = graph, .exec = exec};
    sim_range_foreach(find_allocation, &scan);
    if (scan.found && graph->memory_exec != NULL) {
        /* CUDA: a graph with allocation nodes has at most one
         * instantiation at a time. */
        sim_unlock();
        free(exec);
        return CUDA_ERROR_INVALID_VALUE;
    }
    exec->nodes = calloc(graph->node_count ? graph->node_count : 1, sizeof *exec->nodes);
    result = exec->nodes == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    for (size_t i = 0; i < graph->node_count && result == CUDA_SUCCESS; i++) {
        const struct sim_work *work = &graph->nodes[i]->work;
        /* Allocation and free nodes do their work at instantiation. */
        if (work->kind == SIM_WORK_MARKER)
            continue;
        struct sim_graph_node *node = malloc(sizeof *node);
        if (node == NULL || !copy_work(work, &node->work)) {
            free(node);
            result = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        exec->nodes[exec->node_count++] = node;
    }
    if (result == CUDA_SUCCESS && scan.found) {
        sim_range_foreach(map_allocation, &scan);
        if (scan.failed) {
            sim_range_foreach(unmap_allocation, exec);
            result = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            exec->holds_memory = true;
            exec->graph = graph;
            graph->memory_exec = exec;
        }
    }
    if (result != CUDA_SUCCESS) {
        sim_unlock();
        if (exec->nodes != NULL)
            nodes_free(exec->nodes, exec->node_count);
        free(exec);
        return result;
    }
    sim_handle_register(&exec->handle, SIM_HANDLE_GRAPH_EXEC);
    sim_unlock();
    *phGraphExec = (CUgraphExec)exec;
    return CUDA_SUCCESS;
}

SIM_EXPORT_VARIANT(cuGraphInstantiateWithFlags,
                   (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags),
                   instantiate(phGraphExec, hGraph, flags))

/* The CUDA 10 and 11 form: no failure is ever reported through the error
 * node or the log, which instantiation here cannot produce. */
static CUresult instantiate_with_log(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    if (phErrorNode != NULL)
        *phErrorNode = NULL;
    if (logBuffer != NULL && bufferSize > 0)
        logBuffer[0] = '\0';
    return instantiate(phGraphExec, hGraph, 0);
}

SIM_EXPORT_SAME_VARIANTS(cuGraphInstantiate, cuGraphInstantiate_v2,
                         (CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                          char *logBuffer, size_t bufferSize),
                         instantiate_with_log(phGraphExec, hGraph, phErrorNode, logBuffer,
                                              bufferSize))

static CUresult upload(CUgraphExec hGraphExec, CUstream hStream, bool per_thread_default);

static CUresult instantiate_with_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params,
                                        bool per_thread_default)
{
    if (params == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    params->hErrNode_out = NULL;
    CUresult result = instantiate(phGraphExec, hGraph, params->flags);
    if (result == CUDA_SUCCESS && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)) {
        result = upload(*phGraphExec, params->hUploadStream, per_thread_default);
        if (result != CUDA_SUCCESS)
            cuGraphExecDestroy(*phGraphExec);
    }
    params->result_out =
        result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}

SIM_EXPORT_VARIANT(cuGraphInstantiateWithParams,
                   (CUgraphExec *phGraphExec, CUgraph hGraph,
                    CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
                   instantiate_with_params(phGraphExec, hGraph, instantiateParams, false))

SIM_EXPORT_VARIANT(cuGraphInstantiateWithParams_ptsz,
                   (CUgraphExec *phGraphExec, CUgraph hGraph,
                    CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
                   instantiate_with_params(phGraphExec, hGraph, instantiateParams, true))

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    SIM_ENTER("cuGraphExecDestroy");
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    bool live = sim_handle_is_live(hGraphExec, SIM_HANDLE_GRAPH_EXEC);
    struct sim_graph_exec *exec = (struct sim_graph_exec *)hGraphExec;
    if (live)
        sim_handle_unregister(&exec->handle);
    sim_unlock();
    if (!live)
        return CUDA_ERROR_INVALID_HANDLE;
    /* Launches already queued keep running on the memory the instantiation
     * maps, so it goes only once they are done. Launched nodes are copies:
     * nothing else of the instantiation is still in use. */
    if (exec->holds_memory)
        sim_context_drain(exec->context, false);
    sim_lock();
    if (exec->holds_memory) {
        sim_range_foreach(unmap_allocation, exec);
        /* The graph, if still alive, may be instantiated again. */
        if (exec->graph != NULL)
            exec->graph->memory_exec = NULL;
    }
    sim_unlock();
    nodes_free(exec->nodes, exec->node_count);
    free(exec);
    return CUDA_SUCCESS;
}

/* The instantiation and stream of a launch or upload, checked. */
static CUresult launch_target(CUgraphExec hGraphExec, CUstream hStream, bool per_thread_default,
                              struct sim_graph_exec **exec, struct sim_stream **stream)
{
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult result = sim_stream_resolve(hStream, per_thread_default, stream);
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    bool live = sim_handle_is_live(hGraphExec, SIM_HANDLE_GRAPH_EXEC);
    *exec = (struct sim_graph_exec *)hGraphExec;
    if (!live)
        result = CUDA_ERROR_INVALID_HANDLE;
    else if ((*exec)->context != (*stream)->context)
        result = CUDA_ERROR_INVALID_VALUE;
    sim_unlock();
    return result;
}

static CUresult upload(CUgraphExec hGraphExec, CUstream hStream, bool per_thread_default)
{
    struct sim_graph_exec *exec;
    struct sim_stream *stream;
    /* Nothing to upload: the nodes already live where they run. */
    return launch_target(hGraphExec, hStream, per_thread_default, &exec, &stream);
}

SIM_EXPORT_VARIANT(cuGraphUpload, (CUgraphExec hGraphExec, CUstream hStream),
                   upload(hGraphExec, hStream, false))

SIM_EXPORT_VARIANT(cuGraphUpload_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   upload(hGraphExec, hStream, true))

static CUresult graph_launch(CUgraphExec hGraphExec, CUstream hStream, bool per_thread_default)
{
    struct sim_graph_exec *exec;
    struct sim_stream *stream;
    CUresult result = launch_target(hGraphExec, hStream, per_thread_default, &exec, &stream);
    if (result != CUDA_SUCCESS)
        return result;
    result = sim_sticky_error_or(stream->context, CUDA_SUCCESS);
    /* Each node is queued like the call that recorded it, so a launch into
     * a capturing stream records the nodes into that capture. */
    for (size_t i = 0; i < exec->node_count && result == CUDA_SUCCESS; i++) {
        struct sim_work work;
        if (!copy_work(&exec->nodes[i]->work, &work))
            return CUDA_ERROR_OUT_OF_MEMORY;
        result = sim_stream_submit(stream, &work, NULL);
        if (result != CUDA_SUCCESS && work.kind == SIM_WORK_KERNEL)
            sim_kernel_discard(work.u.kernel.launch);
    }
    return result;
}

SIM_EXPORT_VARIANT(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream),
                   graph_launch(hGraphExec, hStream, false))

SIM_EXPORT_VARIANT(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
                   graph_launch(hGraphExec, hStream, true))
