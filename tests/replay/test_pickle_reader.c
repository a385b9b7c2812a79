/* The restricted pickle reader: data opcodes of protocols 2 to 5 become a
 * value tree; every opcode that imports or calls code is refused with the
 * byte offset and the opcode's name. Inputs are assembled by hand so each
 * test shows the exact opcodes it exercises. */
#include <criterion/criterion.h>
#include <string.h>

#include "pickle_reader.h"

static struct data_document document;

static void release(void)
{
    data_document_destroy(&document);
}

TestSuite(pickle_reader, .fini = release);

#define READ_OK(bytes)                                                                             \
    do {                                                                                           \
        static const uint8_t input[] = bytes;                                                      \
        struct read_error error = {{0}};                                                         \
        cr_assert(pickle_read(input, sizeof input - 1, &document, &error), "%s", error.message);   \
    } while (0)

static void expect_error(const uint8_t *input, size_t length, const char *message)
{
    struct read_error error = {{0}};
    cr_assert_not(pickle_read(input, length, &document, &error));
    cr_assert_str_eq(error.message, message);
    cr_assert_null(document.root);
}

#define EXPECT_ERROR(bytes, message)                                                               \
    do {                                                                                           \
        static const uint8_t input[] = bytes;                                                      \
        expect_error(input, sizeof input - 1, message);                                            \
    } while (0)

static int64_t integer_at(const struct data_value *list, size_t index)
{
    cr_assert_eq(list->sequence.items[index]->kind, DATA_INT);
    return list->sequence.items[index]->integer;
}

Test(pickle_reader, reads_a_dict_with_protocol_2_memo_opcodes)
{
    /* {'action': 'alloc', 'addr': 4096} with BINPUT/BINGET reusing 'alloc'. */
    READ_OK("\x80\x02}q\x00(X\x06\x00\x00\x00"
            "actionq\x01X\x05\x00\x00\x00"
            "allocq\x02"
            "X\x04\x00\x00\x00"
            "addrq\x03M\x00\x10X\x04\x00\x00\x00kindh\x02u.");
    const struct data_value *root = document.root;
    cr_assert_eq(root->kind, DATA_DICT);
    cr_assert_eq(root->sequence.count, 3);
    cr_assert(data_string_is(data_dict_get(root, "action"), "alloc"));
    cr_assert_eq(data_dict_get(root, "addr")->integer, 4096);
    cr_assert_eq(data_dict_get(root, "kind"), data_dict_get(root, "action"),
                 "BINGET returns the memoised value itself");
    cr_assert_null(data_dict_get(root, "size"));
}

Test(pickle_reader, reads_every_integer_width)
{
    /* [-2, 255, 65535, 2**48 + 1 (LONG1), -129 (LONG1), 2**63 - 1 (LONG4), 0 (LONG1 empty)] */
    READ_OK("\x80\x04\x95\x2b\x00\x00\x00\x00\x00\x00\x00]\x94("
            "J\xfe\xff\xff\xff"
            "K\xff"
            "M\xff\xff"
            "\x8a\x07\x01\x00\x00\x00\x00\x00\x01"
            "\x8a\x02\x7f\xff"
            "\x8b\x08\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f"
            "\x8a\x00"
            "e.");
    const struct data_value *list = document.root;
    cr_assert_eq(list->kind, DATA_LIST);
    cr_assert_eq(list->sequence.count, 7);
    cr_assert_eq(integer_at(list, 0), -2);
    cr_assert_eq(integer_at(list, 1), 255);
    cr_assert_eq(integer_at(list, 2), 65535);
    cr_assert_eq(integer_at(list, 3), (INT64_C(1) << 48) + 1);
    cr_assert_eq(integer_at(list, 4), -129);
    cr_assert_eq(integer_at(list, 5), INT64_MAX);
    cr_assert_eq(integer_at(list, 6), 0);
}

Test(pickle_reader, reads_floats_booleans_none_tuples_and_bytes)
{
    /* (0.5, True, False, None, (1, 2), b'ab', 'é' as BINUNICODE8) */
    READ_OK("\x80\x04(G\x3f\xe0\x00\x00\x00\x00\x00\x00\x88\x89NK\x01K\x02\x86"
            "C\x02"
            "ab"
            "\x8d\x02\x00\x00\x00\x00\x00\x00\x00\xc3\xa9t.");
    const struct data_value *tuple = document.root;
    cr_assert_eq(tuple->kind, DATA_TUPLE);
    cr_assert_eq(tuple->sequence.count, 7);
    cr_assert_float_eq(tuple->sequence.items[0]->real, 0.5, 0);
    cr_assert(tuple->sequence.items[1]->boolean);
    cr_assert_not(tuple->sequence.items[2]->boolean);
    cr_assert_eq(tuple->sequence.items[3]->kind, DATA_NONE);
    cr_assert_eq(tuple->sequence.items[4]->kind, DATA_TUPLE);
    cr_assert_eq(integer_at(tuple->sequence.items[4], 1), 2);
    cr_assert_eq(tuple->sequence.items[5]->kind, DATA_BYTES);
    cr_assert_eq(tuple->sequence.items[5]->text.length, 2);
    cr_assert(data_string_is(tuple->sequence.items[6], "\xc3\xa9"));
}

Test(pickle_reader, a_later_setitem_replaces_an_earlier_value)
{
    READ_OK("\x80\x03}(\x8c\x01kK\x01\x8c\x01kK\x02u.");
    cr_assert_eq(data_dict_get(document.root, "k")->integer, 2);
}

Test(pickle_reader, refuses_global)
{
    /* pickle.dumps(os.system, protocol=2) starts with GLOBAL 'posix system'. */
    EXPECT_ERROR("\x80\x02"
                 "cposix\nsystem\nq\x00.",
                 "byte 2: opcode GLOBAL (0x63) refused: it would import or call Python code, "
                 "and a memory snapshot holds only dicts, lists, tuples, numbers and strings");
}

Test(pickle_reader, refuses_stack_global)
{
    EXPECT_ERROR(
        "\x80\x04\x8c\x05posix\x8c\x06system\x93.",
        "byte 17: opcode STACK_GLOBAL (0x93) refused: it would import or call Python "
        "code, and a memory snapshot holds only dicts, lists, tuples, numbers and strings");
}

Test(pickle_reader, refuses_reduce_even_without_a_global_before_it)
{
    EXPECT_ERROR("\x80\x02]q\x00)R.",
                 "byte 6: opcode REDUCE (0x52) refused: it would import or call Python code, "
                 "and a memory snapshot holds only dicts, lists, tuples, numbers and strings");
}

Test(pickle_reader, refuses_build_inst_obj_and_newobj)
{
    EXPECT_ERROR(
        "\x80\x02}}b.",
        "byte 4: opcode BUILD (0x62) refused: it would import or call "
        "Python code, and a memory snapshot holds only dicts, lists, tuples, numbers and strings");
    EXPECT_ERROR("\x80\x02(imod\nname\n.",
                 "byte 3: opcode INST (0x69) refused: it would import "
                 "or call Python code, and a memory snapshot holds only dicts, lists, tuples, "
                 "numbers and strings");
    EXPECT_ERROR(
        "\x80\x02(o.",
        "byte 3: opcode OBJ (0x6f) refused: it would import or call "
        "Python code, and a memory snapshot holds only dicts, lists, tuples, numbers and strings");
    EXPECT_ERROR("\x80\x02))\x81.",
                 "byte 4: opcode NEWOBJ (0x81) refused: it would import or "
                 "call Python code, and a memory snapshot holds only dicts, lists, tuples, "
                 "numbers and strings");
}

Test(pickle_reader, names_harmless_opcodes_that_snapshots_do_not_use)
{
    EXPECT_ERROR("\x80\x02I42\n.", "byte 2: opcode INT (0x49) is not supported: memory "
                                   "snapshots (pickle protocol 2 to 5) do not use it");
}

Test(pickle_reader, rejects_unknown_bytes)
{
    EXPECT_ERROR("\x80\x02\xff.", "byte 2: unknown pickle opcode 0xff");
}

Test(pickle_reader, rejects_files_that_are_not_protocol_2_to_5_pickles)
{
    EXPECT_ERROR("(dp0\n.", "byte 0: not a pickle of protocol 2 to 5 (it must start with the "
                            "PROTO opcode 0x80)");
    EXPECT_ERROR("\x80\x01}.", "byte 0: PROTO names a protocol other than 2 to 5");
}

Test(pickle_reader, rejects_truncated_input)
{
    EXPECT_ERROR("\x80\x02}", "byte 3: the file ends before the STOP opcode");
    EXPECT_ERROR("\x80\x02J\x01\x02",
                 "byte 2: BININT is cut short: the file ends inside its operand");
    EXPECT_ERROR("\x80\x02X\x10\x00\x00\x00"
                 "abc.",
                 "byte 2: BINUNICODE is cut short: its text "
                 "runs past the end of the file");
}

Test(pickle_reader, rejects_malformed_structure)
{
    EXPECT_ERROR("\x80\x02h\x05.", "byte 2: BINGET refers to memo key 5, which was never stored");
    EXPECT_ERROR("\x80\x02K\x01K\x02.", "byte 6: STOP leaves other than exactly one value "
                                        "(malformed pickle)");
    EXPECT_ERROR("\x80\x02]K\x01K\x02s.", "byte 7: SETITEM applied to a list (expected a dict)");
    EXPECT_ERROR("\x80\x02}(K\x01u.", "byte 6: SETITEMS has an odd number of items (a key "
                                      "without a value)");
    EXPECT_ERROR("\x80\x02"
                 "e.",
                 "byte 2: APPENDS without a MARK before it (malformed pickle)");
    EXPECT_ERROR("\x80\x02\x8b\x10\x00\x00\x00\x01\x02.",
                 "byte 2: LONG4 is cut short: the file ends inside its operand");
}

Test(pickle_reader, keeps_integers_of_any_width)
{
    /* [2**64 - 1 (LONG1 of 9 bytes, a real frame's line), -1 in 9 bytes,
     * -2**63 in 9 bytes, -2**64 (LONG1), 2**64 + 5 in a 20-byte LONG4,
     * 2**63 in 9 bytes] */
    READ_OK("\x80\x02]("
            "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"
            "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xff"
            "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\xff"
            "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\xff"
            "\x8b\x14\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00"
            "\x00\x00\x00\x00\x00"
            "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"
            "e.");
    const struct data_value *list = document.root;
    cr_assert_eq(list->sequence.count, 6);
    bool wide[] = {true, false, false, true, true, true};
    for (size_t index = 0; index < 6; index++) {
        cr_assert_eq(list->sequence.items[index]->kind, DATA_INT);
        cr_assert_eq(list->sequence.items[index]->too_wide, wide[index], "item %zu", index);
    }
    cr_assert_eq(integer_at(list, 1), -1);
    cr_assert_eq(integer_at(list, 2), INT64_MIN);
}

Test(pickle_reader, builds_empty_containers_from_a_mark_on_an_empty_stack)
{
    /* Found by fuzzing: DICT right after the first MARK, nothing pushed yet. */
    READ_OK("\x80\x05(d.");
    cr_assert_eq(document.root->kind, DATA_DICT);
    cr_assert_eq(document.root->sequence.count, 0);
}

/* pickle_read_skipping with the snapshot reader's one skipped key. The
 * pickles come from Python's pickle.dumps(..., protocol=4) unless they say
 * they were assembled by hand. */
static const char *const frames_key[] = {"frames"};

#define READ_SKIPPING_OK(bytes)                                                                    \
    do {                                                                                           \
        static const uint8_t input[] = bytes;                                                      \
        struct read_error error = {{0}};                                                         \
        cr_assert(pickle_read_skipping(input, sizeof input - 1, frames_key, 1, &document, &error), \
                  "%s", error.message);                                                            \
    } while (0)

/* Both readers refuse `input` with the same message. */
static void expect_same_error(const uint8_t *input, size_t length, const char *message)
{
    expect_error(input, length, message);
    struct read_error error = {{0}};
    cr_assert_not(pickle_read_skipping(input, length, frames_key, 1, &document, &error));
    cr_assert_str_eq(error.message, message);
    cr_assert_null(document.root);
}

#define EXPECT_SAME_ERROR(bytes, message)                                                          \
    do {                                                                                           \
        static const uint8_t input[] = bytes;                                                      \
        expect_same_error(input, sizeof input - 1, message);                                       \
    } while (0)

Test(pickle_reader, skipping_keeps_every_other_value)
{
    /* {'a': {'frames': [{'name': 'f', 'line': 7}], 'x': 1}, 'b': 2} */
    READ_SKIPPING_OK("\x80\x04\x95=\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01"
                     "a\x94}\x94(\x8c\x06"
                     "frames\x94]\x94}\x94(\x8c\x04name\x94\x8c\x01"
                     "f\x94\x8c\x04line\x94K\x07ua\x8c\x01x\x94K\x01u\x8c\x01"
                     "b\x94K\x02u.");
    const struct data_value *inner = data_dict_get(document.root, "a");
    cr_assert_eq(inner->sequence.count, 2, "the skipped value keeps its pair");
    cr_assert_eq(data_dict_get(inner, "frames")->kind, DATA_LIST);
    cr_assert_eq(data_dict_get(inner, "x")->integer, 1);
    cr_assert_eq(data_dict_get(document.root, "b")->integer, 2);
}

Test(pickle_reader, skipping_resolves_memo_references_from_kept_places_into_skipped_values)
{
    /* frame = {'name': 'f'}; frames = [frame, frame]
     * {'a': {'frames': frames, 'x': 1}, 'b': frames, 'c': frame}: 'b' and
     * 'c' refer (BINGET 4 and 5) to objects first built inside the skipped
     * value. */
    READ_SKIPPING_OK("\x80\x04\x95<\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01"
                     "a\x94}\x94(\x8c\x06"
                     "frames\x94]\x94(}\x94\x8c\x04name\x94\x8c\x01"
                     "f\x94sh\x05"
                     "e\x8c\x01x\x94K\x01u\x8c\x01"
                     "b\x94h\x04\x8c\x01"
                     "c\x94h\x05u.");
    const struct data_value *frames = data_dict_get(document.root, "b");
    cr_assert_eq(frames->kind, DATA_LIST);
    cr_assert_eq(frames->sequence.count, 2);
    for (size_t index = 0; index < 2; index++)
        cr_assert(data_string_is(data_dict_get(frames->sequence.items[index], "name"), "f"),
                  "frame %zu", index);
    const struct data_value *frame = data_dict_get(document.root, "c");
    cr_assert_eq(frame, frames->sequence.items[0], "one memo entry, one object");
    cr_assert(data_string_is(data_dict_get(frame, "name"), "f"));
    cr_assert_eq(data_dict_get(data_dict_get(document.root, "a"), "x")->integer, 1);
}

Test(pickle_reader, skipping_keeps_strings_a_skipped_value_shares_with_kept_places)
{
    /* {'frames': [{'filename': '', 'line': 3}, {'filename': 'b.py', 'line': 4}],
     *  'kept': ''}: CPython has one empty string, memoized inside the frames
     * and referred to (BINGET 5) under 'kept'. */
    READ_SKIPPING_OK("\x80\x04\x95G\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x06"
                     "frames\x94]\x94(}\x94(\x8c\x08"
                     "filename\x94\x8c\x00\x94\x8c\x04line\x94K\x03u}\x94(h\x04\x8c\x04"
                     "b.py\x94h\x06K\x04ue\x8c\x04kept\x94h\x05u.");
    cr_assert(data_string_is(data_dict_get(document.root, "kept"), ""));
}

Test(pickle_reader, skipping_applies_what_a_skipped_value_appends_to_a_kept_list)
{
    /* By hand: {'first': [], 'keep': L, 'frames': [L]} where the frames
     * batch appends 'z' to L (BINGET 1, SHORT_BINUNICODE 'z', APPEND) before
     * appending L itself. */
    READ_SKIPPING_OK("\x80\x04}(\x8c\x05" "first]\x94\x8c\x04keep]\x94\x8c\x06"
                     "frames](h\x01\x8c\x01z"
                     "ae" /* APPEND, APPENDS */
                     "u.");
    const struct data_value *kept = data_dict_get(document.root, "keep");
    cr_assert_eq(kept->kind, DATA_LIST);
    cr_assert_eq(kept->sequence.count, 1);
    cr_assert(data_string_is(kept->sequence.items[0], "z"));
    cr_assert_eq(data_dict_get(document.root, "first")->sequence.count, 0);
}

Test(pickle_reader, skipping_reports_malformed_skipped_values_as_reading_them_would)
{
    /* By hand: {'frames': [memo key 9 never stored, ...], 'x': 1}. */
    EXPECT_SAME_ERROR("\x80\x04}(\x8c\x06"
                      "frames](h\x09K\x01"
                      "e\x8c\x01xK\x01u.",
                      "byte 14: BINGET refers to memo key 9, which was never stored");
    /* A frame dict with a key and no value, inside the batch. */
    EXPECT_SAME_ERROR("\x80\x04}(\x8c\x06"
                      "frames](}(K\x01u"
                      "e\x8c\x01xK\x01u.",
                      "byte 18: SETITEMS has an odd number of items (a key without a value)");
    /* APPENDS on a dict placeholder. */
    EXPECT_SAME_ERROR("\x80\x04}(\x8c\x06"
                      "frames}(K\x01"
                      "e\x8c\x01xK\x01u.",
                      "byte 16: APPENDS applied to a dict (expected a list)");
    /* The file ends inside the skipped value. */
    EXPECT_SAME_ERROR("\x80\x04}(\x8c\x06"
                      "frames](K\x01K\x02",
                      "byte 18: the file ends before the STOP opcode");
}
