/* The GPUSIM_STATS document and the gpusim_* query functions of gpusim.h. */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A device's current or peak physical bytes; 0 before cuInit or for a
 * device that does not exist. */
static size_t physical_bytes(int device, bool peak)
{
    if (!atomic_load(&sim.initialized) || device < 0 || device >= sim.device_count)
        return 0;
    sim_lock();
    size_t bytes = peak ? sim.devices[device].peak_physical_bytes : sim.devices[device].physical_bytes;
    sim_unlock();
    return bytes;
}

SIM_EXPORT size_t gpusim_physical_bytes(int device)
{
    return physical_bytes(device, false);
}

SIM_EXPORT size_t gpusim_peak_physical_bytes(int device)
{
    return physical_bytes(device, true);
}

SIM_EXPORT unsigned long long gpusim_call_count(const char *name)
{
    if (name == NULL)
        return 0;
    for (struct sim_entry_point *entry = sim_registered_entry_points(); entry != NULL;
         entry = entry->next_registered)
        if (strcmp(entry->name, name) == 0)
            return atomic_load(&entry->calls);
    return 0;
}

SIM_EXPORT unsigned long long gpusim_synchronization_count(void)
{
    return atomic_load(&sim.synchronizations);
}

SIM_EXPORT int gpusim_write_stats(const char *path)
{
    FILE *file = fopen(path, "w");
    if (file == NULL)
        return -1;
    fprintf(file, "{\n  \"calls\": {");
    const char *separator = "";
    for (struct sim_entry_point *entry = sim_registered_entry_points(); entry != NULL;
         entry = entry->next_registered) {
        /* Entry names are C identifiers: no JSON escaping needed. */
        fprintf(file, "%s\n    \"%s\": %llu", separator, entry->name, atomic_load(&entry->calls));
        separator = ",";
    }
    size_t peak = 0, current = 0;
    sim_lock();
    for (int i = 0; i < sim.device_count; i++) {
        peak += sim.devices[i].peak_physical_bytes;
        current += sim.devices[i].physical_bytes;
    }
    fprintf(file, "\n  },\n  \"peak_physical_bytes\": %zu,\n  \"current_physical_bytes\": %zu,\n",
            peak, current);
    fprintf(file, "  \"synchronizations\": %llu,\n  \"races\": %llu,\n  \"devices\": [",
            atomic_load(&sim.synchronizations), sim_racecheck_race_count());
    for (int i = 0; i < sim.device_count; i++)
        fprintf(file,
                "%s\n    {\"capacity\": %zu, \"peak_physical_bytes\": %zu, "
                "\"current_physical_bytes\": %zu}",
                i == 0 ? "" : ",", sim.devices[i].capacity, sim.devices[i].peak_physical_bytes,
                sim.devices[i].physical_bytes);
    sim_unlock();
    fprintf(file, "\n  ]\n}\n");
    int failed = ferror(file);
    if (fclose(file) != 0 || failed) {
        if (errno == 0)
            errno = EIO;
        return -1;
    }
    return 0;
}

void sim_write_stats_at_exit(void);

void sim_write_stats_at_exit(void)
{
    if (gpusim_write_stats(sim.settings.stats_path) != 0)
        fprintf(stderr, "gpusim: cannot write GPUSIM_STATS file '%s': %s\n",
                sim.settings.stats_path, strerror(errno));
}
