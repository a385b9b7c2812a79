/* RMM replay CSV reader: accepted rows, pairing of frees with allocations,
 * inferred pre-existing allocations, and the exact message of each error. */
#include <criterion/criterion.h>
#include <string.h>

#include "rmm_csv_reader.h"

#define HEADER RMM_CSV_HEADER "\n"

static struct replay_trace trace;

static void release(void)
{
    replay_trace_destroy(&trace);
}

TestSuite(rmm_csv_reader, .fini = release);

static bool read_text(const char *text, struct read_error *error)
{
    return rmm_csv_read(text, strlen(text), &trace, error);
}

static void expect_error(const char *text, const char *message)
{
    struct read_error error = {{0}};
    cr_assert_not(read_text(text, &error), "accepted: %s", text);
    cr_assert_str_eq(error.message, message);
    cr_assert_eq(trace.event_count, 0, "a failed read leaves no events");
}

Test(rmm_csv_reader, reads_rows_and_pairs_each_free_with_its_allocation)
{
    struct read_error error;
    cr_assert(read_text(HEADER "140573312345856,10:00:00.000001,allocate,0x7f0a00000000,1024,0x0\n"
                               "140573312345856,10:00:00.000002,allocate,0x7f0a00000400,2048,0x0\n"
                               "140573312345857,10:00:00.5,free,0x7f0a00000000,1024,0x0\n"
                               "140573312345857,10:00:01.000000,allocate,0x7f0a00000000,4096,0x0\n",
                        &error),
              "%s", error.message);
    cr_assert_eq(trace.event_count, 4);
    cr_assert_eq(trace.alloc_count, 3);
    cr_assert_eq(trace.free_count, 1);
    cr_assert_eq(trace.inferred_count, 0);
    cr_assert_eq(trace.slot_count, 3);
    cr_assert_eq(trace.events[2].action, REPLAY_FREE);
    cr_assert_eq(trace.events[2].slot, trace.events[0].slot, "the free ends the first allocation");
    cr_assert_neq(trace.events[3].slot, trace.events[0].slot,
                  "a reused address is a new allocation");
    cr_assert_eq(trace.events[1].size, 2048);
    cr_assert_eq(trace.events[0].original_address, 0x7f0a00000000);
    cr_assert_eq(trace.events[0].time_us, 36000000001);
    cr_assert_eq(trace.events[2].time_us, 36000500000);
    cr_assert_eq(trace.thread_count, 2);
    cr_assert_eq(trace.threads[trace.events[2].thread_index], 140573312345857);
    cr_assert_eq(trace.events[3].position.major, 5, "line numbers count the header");
    cr_assert_eq(trace.peak_live_bytes, 2048 + 4096);
}

Test(rmm_csv_reader, distinct_streams_get_distinct_indexes)
{
    struct read_error error;
    cr_assert(read_text(HEADER "1,1.0,allocate,0x1000,512,0x0\n"
                               "1,1.0,allocate,0x2000,512,0x55d0c0a0\n"
                               "1,1.0,allocate,0x3000,512,1439744160\n",
                        &error),
              "%s", error.message);
    cr_assert_eq(trace.stream_count, 2, "0x55d0c0a0 and 1439744160 are the same stream");
    cr_assert_eq(trace.streams[trace.events[1].stream_index], 0x55d0c0a0);
    cr_assert_eq(trace.events[2].stream_index, trace.events[1].stream_index);
    cr_assert_neq(trace.events[0].stream_index, trace.events[1].stream_index);
}

Test(rmm_csv_reader, skips_allocation_failures_and_blank_lines_and_accepts_crlf)
{
    struct read_error error;
    cr_assert(read_text(RMM_CSV_HEADER "\r\n"
                                       "1,1.0,allocate failure,(nil),1099511627776,0x0\r\n"
                                       "\r\n"
                                       "1,1.0,deallocate,0x1000,512,0x0\r\n",
                        &error),
              "%s", error.message);
    cr_assert_eq(trace.ignored_count, 1);
    cr_assert_eq(trace.free_count, 1);
}

Test(rmm_csv_reader, a_free_of_an_unknown_pointer_is_an_allocation_made_before_the_log)
{
    struct read_error error;
    cr_assert(read_text(HEADER "1,1.0,allocate,0x9000,512,0x0\n"
                               "1,1.0,free,0x5000,3000,0x7\n"
                               "1,1.0,free,0x3000,1000,0x0\n",
                        &error),
              "%s", error.message);
    cr_assert_eq(trace.inferred_count, 2);
    cr_assert_eq(trace.event_count, 5);
    /* Inferred allocations come first, in address order. */
    cr_assert(trace.events[0].inferred && trace.events[1].inferred);
    cr_assert_eq(trace.events[0].original_address, 0x3000);
    cr_assert_eq(trace.events[0].size, 1000);
    cr_assert_eq(trace.events[1].original_address, 0x5000);
    cr_assert_eq(trace.events[1].size, 3000);
    cr_assert_eq(trace.streams[trace.events[1].stream_index], 7);
    cr_assert_eq(trace.events[3].slot, trace.events[1].slot,
                 "the free of 0x5000 ends its inferred allocation");
    cr_assert_eq(trace.events[4].slot, trace.events[0].slot);
    cr_assert_eq(trace.peak_live_bytes, 4512);
}

Test(rmm_csv_reader, rejects_a_bad_header)
{
    expect_error("Thread,Time,Action,Pointer,Size\n1,1.0,allocate,0x1000,512\n",
                 "line 1: header is 'Thread,Time,Action,Pointer,Size' "
                 "(expected 'Thread,Time,Action,Pointer,Size,Stream')");
}

Test(rmm_csv_reader, rejects_an_empty_file)
{
    expect_error(
        "", "line 1: empty file (expected the header 'Thread,Time,Action,Pointer,Size,Stream')");
}

Test(rmm_csv_reader, rejects_a_row_with_too_few_fields)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,512\n",
                 "line 2: 5 fields (expected 6: Thread,Time,Action,Pointer,Size,Stream)");
}

Test(rmm_csv_reader, rejects_an_unknown_action)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,512,0x0\n1,1.0,release,0x1000,512,0x0\n",
                 "line 3: unknown action 'release' (expected allocate, free, deallocate or "
                 "allocate failure)");
}

Test(rmm_csv_reader, rejects_a_size_that_is_not_a_number)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,12k,0x0\n",
                 "line 2: Size '12k' is not a number of bytes (expected a decimal integer)");
}

Test(rmm_csv_reader, rejects_a_size_that_overflows)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,18446744073709551616,0x0\n",
                 "line 2: Size '18446744073709551616' is not a number of bytes (expected a "
                 "decimal integer)");
}

Test(rmm_csv_reader, rejects_a_pointer_that_is_not_hexadecimal)
{
    expect_error(HEADER "1,1.0,allocate,0x10g0,512,0x0\n",
                 "line 2: Pointer '0x10g0' is not an address (expected hexadecimal such as "
                 "0x7f0a00000000)");
}

Test(rmm_csv_reader, rejects_a_bad_time)
{
    expect_error(HEADER "1,10:61:00.0,allocate,0x1000,512,0x0\n",
                 "line 2: Time '10:61:00.0' is not a time (expected HH:MM:SS.ffffff or seconds)");
}

Test(rmm_csv_reader, rejects_a_bad_thread_and_stream)
{
    expect_error(
        HEADER "t1,1.0,allocate,0x1000,512,0x0\n",
        "line 2: Thread 't1' is not a thread id (expected a decimal or 0x-prefixed number)");
    expect_error(HEADER "1,1.0,allocate,0x1000,512,stream0\n",
                 "line 2: Stream 'stream0' is not a stream handle (expected a decimal or "
                 "0x-prefixed number)");
}

Test(rmm_csv_reader, rejects_a_second_allocation_of_a_live_pointer)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,512,0x0\n"
                        "1,1.0,allocate,0x2000,512,0x0\n"
                        "1,1.0,allocate,0x1000,1024,0x0\n",
                 "line 4: allocation at 0x1000, which is still live (allocated at line 2)");
}

Test(rmm_csv_reader, rejects_a_second_free_of_a_pointer)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,512,0x0\n"
                        "1,1.0,free,0x1000,512,0x0\n"
                        "1,1.0,free,0x1000,512,0x0\n",
                 "line 4: free of 0x1000, already freed at line 3");
}

Test(rmm_csv_reader, quotes_at_most_forty_bytes_of_a_bad_field)
{
    expect_error(HEADER "1,1.0,allocate,0x1000,1234567890123456789012345678901234567890123,0x0\n",
                 "line 2: Size '1234567890123456789012345678901234567890...' is not a number of "
                 "bytes (expected a decimal integer)");
}

Test(rmm_csv_reader, writes_unprintable_bytes_of_a_bad_field_as_escapes)
{
    expect_error(HEADER "1\x19"
                        "1,1.0,allocate,0x1000,512,0x0\n",
                 "line 2: Thread '1\\x191' is not a thread id (expected a decimal or 0x-prefixed "
                 "number)");
}
