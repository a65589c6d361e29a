/* Replays fuzz inputs without libFuzzer: every file named on the command
 * line, or every file in each directory named, through the target. Used by
 * ctest under ASan/UBSan (fuzz_replay_loader) so past crashers stay fixed. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: %s: cannot open\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    size_t got = b ? fread(b, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    fclose(f);
    if (!b || got != (size_t)(n > 0 ? n : 0)) {
        free(b);
        fprintf(stderr, "fuzz_replay: %s: cannot read\n", path);
        return 1;
    }
    LLVMFuzzerTestOneInput(b, got);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_replay: %s: not found\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
            bad |= run_file(p);
            files++;
        }
        if (d)
            closedir(d);
    }
    printf("%d passed, %d failed\n", bad ? files - 1 : files, bad ? 1 : 0);
    return bad;
}
