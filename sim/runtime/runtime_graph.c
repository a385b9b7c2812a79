/* Graphs: creation, instantiation, launch and destruction. A runtime graph
 * and executable graph are the driver's (cudaGraph_t is CUgraph), and the
 * instantiation flags and results number their values as the driver's do,
 * so each call passes its arguments through. */
#include "runtime_driver.h"

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (pGraph == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuGraphCreate, pGraph, flags);
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuGraphDestroy, graph);
}

cudaError_t CUDARTAPI cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (numNodes == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuGraphGetNodes, graph, nodes, numNodes);
}

/* CUDA 12 gave cudaGraphInstantiate the flags form of
 * cudaGraphInstantiateWithFlags; both reach the same driver call. */
static cudaError_t instantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (exec == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuGraphInstantiateWithFlags, exec, graph, flags);
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags)
{
    return instantiate(pGraphExec, graph, flags);
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags)
{
    return instantiate(pGraphExec, graph, flags);
}

cudaError_t sim_runtime_graph_instantiate_with_params(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                      cudaGraphInstantiateParams *params,
                                                      enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    if (exec == NULL || params == NULL)
        return sim_runtime_record(cudaErrorInvalidValue);
    CUDA_GRAPH_INSTANTIATE_PARAMS driver_params = {
        .flags = params->flags,
        .hUploadStream = params->uploadStream,
    };
    cudaError_t status =
        SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuGraphInstantiateWithParams,
                         exec, graph, &driver_params);
    params->errNode_out = driver_params.hErrNode_out;
    params->result_out = status == cudaSuccess ? cudaGraphInstantiateSuccess
                                               : (cudaGraphInstantiateResult)driver_params.result_out;
    return status;
}

cudaError_t sim_runtime_graph_upload(cudaGraphExec_t exec, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuGraphUpload, exec, stream);
}

cudaError_t sim_runtime_graph_launch(cudaGraphExec_t exec, cudaStream_t stream,
                                     enum sim_runtime_default_stream default_stream)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_stream_entry_points(default_stream)->cuGraphLaunch, exec, stream);
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    SIM_RUNTIME_BIND_OR_RETURN();
    return SIM_RUNTIME_CALL(sim_runtime_driver.cuGraphExecDestroy, graphExec);
}
