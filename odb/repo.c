/*
 * repo.c: finding a repository and checking that we may read it.
 *
 * Discovery follows `git -C PATH`: starting at PATH and walking up, a
 * directory is the repository if it holds a .git directory, a .git file
 * ("gitdir: <path>", relative to the file), or is itself a git directory
 * (HEAD, objects/ and refs/, the latter two possibly in its commondir).
 * A linked worktree's gitdir names its commondir in a "commondir" file;
 * objects, packed-refs, shared refs and config live there.
 *
 * Format rules (Git's setup.c; spec §8): core.repositoryformatversion
 * above 1 is refused; in version 1 every extension must be one we
 * implement; in version 0, v1-only extensions are an error and unknown
 * ones are ignored.  We only ever read, so extensions that govern writes
 * (preciousObjects, compatObjectFormat, partialClone's promisor objects)
 * are understood by honouring them trivially.
 */
#include "odb_i.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* extensions valid in version 0 (and 1) */
static const char *const ext_v0[] = {
	"noop", "preciousobjects", "partialclone", "worktreeconfig", NULL,
};

/* extensions that need version 1 */
static const char *const ext_v1[] = {
	"noop-v1", "objectformat", "compatobjectformat", "refstorage",
	"relativeworktrees", "submodulepathconfig", NULL,
};

static int in_list(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(*list, name))
			return 1;
	return 0;
}

void repo_format_init(struct repo_format *fmt)
{
	memset(fmt, 0, sizeof(*fmt));
	fmt->algo = &hash_sha1;
	fmt->ref_storage = REF_STORAGE_FILES;
	fmt->bare = -1;
	fmt->quote_path = 1;
	buf_init(&fmt->unknown);
	buf_init(&fmt->v1_only);
}

void repo_format_release(struct repo_format *fmt)
{
	buf_release(&fmt->unknown);
	buf_release(&fmt->v1_only);
	free(fmt->errmsg);
	fmt->errmsg = NULL;
	free(fmt->promisor);
	fmt->promisor = NULL;
}

static void format_error(struct repo_format *fmt, int code, const char *fmtstr,
			 const char *a, const char *b)
{
	struct buf m = BUF_INIT;

	if (fmt->err)
		return;	/* keep the first */
	buf_addf(&m, fmtstr, a, b);
	fmt->err = code;
	fmt->errmsg = buf_detach(&m, NULL);
}

static int format_cb(const char *key, const char *value, void *data)
{
	struct repo_format *fmt = data;
	const char *ext;

	if (!strcmp(key, "core.repositoryformatversion")) {
		if (config_int(value, &fmt->version))
			format_error(fmt, XL_ECORRUPT,
				     "bad core.repositoryformatversion '%s'%s",
				     value ? value : "", "");
		return 0;
	}
	if (!strcmp(key, "core.bare")) {
		fmt->bare = config_bool(value) == 1;
		return 0;
	}
	if (!strcmp(key, "core.quotepath")) {
		fmt->quote_path = config_bool(value) != 0;
		return 0;
	}
	/*
	 * A partial clone: Git names its promisor remote in
	 * extensions.partialClone (older clones) or marks it with
	 * remote.<name>.promisor.  Only said back to users.
	 */
	if (!strcmp(key, "extensions.partialclone") && value && *value) {
		free(fmt->promisor);
		fmt->promisor = strdup(value);
		fmt->promisor_ext = 1;
	} else if (!strncmp(key, "remote.", 7) && !fmt->promisor_ext) {
		size_t len = strlen(key);

		if (len > 7 + 9 && !strcmp(key + len - 9, ".promisor") &&
		    config_bool(value) == 1 && !fmt->promisor)
			fmt->promisor = strndup(key + 7, len - 7 - 9);
		return 0;
	}
	if (strncmp(key, "extensions.", 11))
		return 0;
	ext = key + 11;
	if (in_list(ext_v0, ext))
		return 0;
	if (!in_list(ext_v1, ext)) {
		buf_addf(&fmt->unknown, "\t%s\n", ext);
		return 0;
	}
	buf_addf(&fmt->v1_only, "\t%s\n", ext);
	if (!strcmp(ext, "objectformat") || !strcmp(ext, "compatobjectformat")) {
		const struct hash_algo *algo = value ? hash_algo_by_name(value) : NULL;

		if (!algo) {
			format_error(fmt, XL_ECORRUPT,
				     "invalid value for 'extensions.%s': '%s'",
				     ext, value ? value : "");
			return 0;
		}
		if (!strcmp(ext, "objectformat")) {
			fmt->algo = algo;
		} else {
			if (fmt->compat_algo)
				format_error(fmt, XL_ECORRUPT,
					     "'extensions.compatobjectformat' already specified as '%s'%s",
					     fmt->compat_algo->name, "");
			fmt->compat_algo = algo;
		}
	} else if (!strcmp(ext, "refstorage")) {
		if (value && !strcmp(value, "files"))
			fmt->ref_storage = REF_STORAGE_FILES;
		else if (value && !strcmp(value, "reftable"))
			fmt->ref_storage = REF_STORAGE_REFTABLE;
		else if (value && strstr(value, "://"))
			format_error(fmt, XL_EUNSUPPORTED,
				     "extensions.refstorage '%s': refs stored at another location are not supported%s",
				     value, "");
		else
			format_error(fmt, XL_ECORRUPT,
				     "invalid value for 'extensions.refstorage': '%s'%s",
				     value ? value : "", "");
	}
	return 0;
}

int repo_format_parse(struct repo_format *fmt, const char *text, size_t len,
		      const char *origin)
{
	return config_parse(text, len, origin, format_cb, fmt);
}

int repo_format_verify(const struct repo_format *fmt)
{
	if (fmt->version > 1 || fmt->version < 0)
		return err_set(XL_EUNSUPPORTED,
			       "Expected git repo version <= 1, found %lld",
			       fmt->version);
	if (fmt->version >= 1 && fmt->unknown.len)
		return err_set(XL_EUNSUPPORTED,
			       "unknown repository extension(s) found:\n%.*s",
			       (int)fmt->unknown.len - 1, fmt->unknown.buf);
	if (fmt->version == 0 && fmt->v1_only.len)
		return err_set(XL_EUNSUPPORTED,
			       "repo version is 0, but v1-only extension(s) found:\n%.*s",
			       (int)fmt->v1_only.len - 1, fmt->v1_only.buf);
	if (fmt->err)
		return err_set(fmt->err, "%s", fmt->errmsg);
	if (fmt->compat_algo && fmt->compat_algo == fmt->algo)
		return err_set(XL_ECORRUPT,
			       "extensions.compatObjectFormat equals extensions.objectFormat (%s)",
			       fmt->algo->name);
	return 0;
}

/* ---- discovery ------------------------------------------------------ */

static int is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/*
 * Read "gitdir: <path>" from a .git file into out (absolute).
 * Returns 0, XL_ECORRUPT.
 */
static int read_gitfile(const char *file, struct buf *out)
{
	struct buf text = BUF_INIT, tmp = BUF_INIT;
	const char *slash;
	int ret;

	if ((ret = file_read(file, 1 << 16, &text)))
		return ret;
	while (text.len && (text.buf[text.len - 1] == '\n' ||
			    text.buf[text.len - 1] == '\r'))
		buf_setlen(&text, text.len - 1);
	if (strncmp(text.buf, "gitdir: ", 8)) {
		buf_release(&text);
		return ERR_CORRUPT("%s: not a .git file (no 'gitdir: ')", file);
	}
	if (text.buf[8] == '/') {
		ret = path_absolute(out, text.buf + 8);
	} else {
		slash = strrchr(file, '/');
		buf_add(&tmp, file, slash ? (size_t)(slash - file + 1) : 0);
		buf_addstr(&tmp, text.buf + 8);
		ret = path_absolute(out, tmp.buf);
	}
	buf_release(&tmp);
	buf_release(&text);
	return ret;
}

/* The commondir of gitdir (gitdir itself unless it names another). */
static int find_commondir(const char *gitdir, struct buf *out)
{
	struct buf path = BUF_INIT, text = BUF_INIT;
	int ret;

	path_join(&path, gitdir, "commondir");
	ret = file_read(path.buf, 1 << 16, &text);
	if (ret == XL_ENOTFOUND) {
		err_clear();
		ret = path_absolute(out, gitdir);
		goto out;
	}
	if (ret)
		goto out;
	while (text.len && (text.buf[text.len - 1] == '\n' ||
			    text.buf[text.len - 1] == '\r'))
		buf_setlen(&text, text.len - 1);
	if (text.buf[0] == '/') {
		ret = path_absolute(out, text.buf);
	} else {
		path_join(&path, gitdir, text.buf);
		ret = path_absolute(out, path.buf);
	}
out:
	buf_release(&path);
	buf_release(&text);
	return ret;
}

/* Does dir look like a git directory?  (HEAD, objects/, refs/) */
static int is_git_directory(const char *dir)
{
	struct buf common = BUF_INIT, p = BUF_INIT;
	int ok = 0;

	path_join(&p, dir, "HEAD");
	if (!is_file(p.buf))
		goto out;
	if (find_commondir(dir, &common)) {
		err_clear();
		goto out;
	}
	path_join(&p, common.buf, "objects");
	if (!is_dir(p.buf))
		goto out;
	path_join(&p, common.buf, "refs");
	ok = is_dir(p.buf);
out:
	buf_release(&p);
	buf_release(&common);
	return ok;
}

/* Find the gitdir for path, walking up from it. */
static int discover(const char *path, struct buf *gitdir)
{
	struct buf dir = BUF_INIT, p = BUF_INIT;
	int ret;

	if ((ret = path_absolute(&dir, path)))
		return ret;
	/* PATH may itself be a .git file */
	if (is_file(dir.buf)) {
		ret = read_gitfile(dir.buf, gitdir);
		goto out;
	}
	if (!is_dir(dir.buf)) {
		ret = err_set(XL_ENOTFOUND, "%s: no such directory", dir.buf);
		goto out;
	}
	for (;;) {
		char *slash;

		path_join(&p, dir.buf, ".git");
		if (is_dir(p.buf) && is_git_directory(p.buf)) {
			ret = path_absolute(gitdir, p.buf);
			goto out;
		}
		if (is_file(p.buf)) {
			ret = read_gitfile(p.buf, gitdir);
			goto out;
		}
		if (is_git_directory(dir.buf)) {
			ret = path_absolute(gitdir, dir.buf);
			goto out;
		}
		slash = strrchr(dir.buf, '/');
		if (!slash || dir.len == 1)
			break;
		buf_setlen(&dir, slash == dir.buf ? 1 : (size_t)(slash - dir.buf));
	}
	ret = err_set(XL_ENOTFOUND,
		      "not a git repository (or any of the parent directories): %s",
		      path);
out:
	buf_release(&dir);
	buf_release(&p);
	return ret;
}

int repo_open(struct repo **out, const char *path)
{
	struct repo *repo = calloc(1, sizeof(*repo));
	struct buf gitdir = BUF_INIT, common = BUF_INIT, p = BUF_INIT,
		   text = BUF_INIT;
	struct repo_format fmt;
	int ret;

	*out = NULL;
	repo_format_init(&fmt);
	if (!repo)
		return err_set(XL_ENOMEM, "out of memory");
	if ((ret = discover(path, &gitdir)))
		goto fail;
	if (!is_git_directory(gitdir.buf)) {
		ret = err_set(XL_ENOTFOUND, "%s: not a git directory", gitdir.buf);
		goto fail;
	}
	if ((ret = find_commondir(gitdir.buf, &common)))
		goto fail;

	path_join(&p, common.buf, "config");
	ret = file_read(p.buf, 1 << 20, &text);
	if (ret == XL_ENOTFOUND) {
		err_clear();	/* no config: version 0, SHA-1, as Git */
	} else if (ret ||
		   (ret = repo_format_parse(&fmt, text.buf, text.len, p.buf))) {
		goto fail;
	}
	if ((ret = repo_format_verify(&fmt))) {
		err_wrap("%s", gitdir.buf);
		goto fail;
	}
	repo->algo = fmt.algo;
	repo->compat_algo = fmt.compat_algo;
	repo->ref_storage = fmt.ref_storage;
	repo->quote_path = fmt.quote_path;
	repo->promisor = fmt.promisor;
	fmt.promisor = NULL;
	repo->gitdir = buf_detach(&gitdir, NULL);
	repo->commondir = buf_detach(&common, NULL);
	path_join(&p, repo->commondir, "objects");
	repo->objdir = buf_detach(&p, NULL);
	if (fmt.bare >= 0) {
		repo->bare = fmt.bare;
	} else {
		/* as Git guesses: a gitdir named .git has a work tree */
		const char *base = strrchr(repo->gitdir, '/');

		repo->bare = !(base && !strcmp(base, "/.git"));
	}
	if (!repo->objdir || !repo->gitdir || !repo->commondir) {
		ret = err_set(XL_ENOMEM, "out of memory");
		goto fail;
	}
	if ((ret = odb_open(&repo->odb, repo->objdir, repo->algo)))
		goto fail;
	repo_format_release(&fmt);
	buf_release(&text);
	*out = repo;
	return 0;
fail:
	repo_format_release(&fmt);
	buf_release(&gitdir);
	buf_release(&common);
	buf_release(&p);
	buf_release(&text);
	repo_close(repo);
	return ret;
}

int repo_probe(const char *dir, const struct hash_algo **algo)
{
	struct buf gitdir = BUF_INIT, common = BUF_INIT, p = BUF_INIT,
		   text = BUF_INIT;
	struct repo_format fmt;
	int ret;

	repo_format_init(&fmt);
	/* no walk up: only dir itself, or its .git */
	path_join(&p, dir, ".git");
	if (is_dir(p.buf) && is_git_directory(p.buf)) {
		ret = path_absolute(&gitdir, p.buf);
	} else if (is_file(p.buf)) {
		ret = read_gitfile(p.buf, &gitdir);
		if (!ret && !is_git_directory(gitdir.buf))
			ret = err_set(XL_ENOTFOUND, "%s: not a git directory",
				      gitdir.buf);
	} else if (is_git_directory(dir)) {
		ret = path_absolute(&gitdir, dir);
	} else {
		ret = err_set(XL_ENOTFOUND, "%s: not a repository", dir);
	}
	if (ret || (ret = find_commondir(gitdir.buf, &common)))
		goto out;
	path_join(&p, common.buf, "config");
	ret = file_read(p.buf, 1 << 20, &text);
	if (ret == XL_ENOTFOUND) {
		err_clear();
		ret = 0;
	} else if (!ret) {
		ret = repo_format_parse(&fmt, text.buf, text.len, p.buf);
	}
	if (!ret && !(ret = repo_format_verify(&fmt)))
		*algo = fmt.algo;
out:
	repo_format_release(&fmt);
	buf_release(&gitdir);
	buf_release(&common);
	buf_release(&p);
	buf_release(&text);
	return ret;
}

void repo_close(struct repo *repo)
{
	if (!repo)
		return;
	odb_close(repo->odb);
	free(repo->gitdir);
	free(repo->commondir);
	free(repo->objdir);
	free(repo->promisor);
	free(repo);
}

const struct hash_algo *repo_algo(const struct repo *repo)
{
	return repo->algo;
}

const struct hash_algo *repo_compat_algo(const struct repo *repo)
{
	return repo->compat_algo;
}

const char *repo_gitdir(const struct repo *repo)
{
	return repo->gitdir;
}

const char *repo_commondir(const struct repo *repo)
{
	return repo->commondir;
}

const char *repo_objdir(const struct repo *repo)
{
	return repo->objdir;
}

enum ref_storage repo_ref_storage(const struct repo *repo)
{
	return repo->ref_storage;
}

int repo_is_bare(const struct repo *repo)
{
	return repo->bare;
}

int repo_quote_path(const struct repo *repo)
{
	return repo->quote_path;
}

const char *repo_promisor(const struct repo *repo)
{
	return repo->promisor;
}

int repo_has_promisor_packs(const struct repo *repo)
{
	struct buf p = BUF_INIT;
	struct dirent *de;
	DIR *dir;
	int found = 0;

	path_join(&p, repo->objdir, "pack");
	dir = p.buf ? opendir(p.buf) : NULL;
	buf_release(&p);
	if (!dir)
		return 0;
	while (!found && (de = readdir(dir))) {
		size_t len = strlen(de->d_name);

		found = len > 9 && !strcmp(de->d_name + len - 9, ".promisor");
	}
	closedir(dir);
	return found;
}

int repo_shallow_read(const struct repo *repo, struct buf *out)
{
	struct buf p = BUF_INIT;
	int ret;

	buf_reset(out);
	path_join(&p, repo->commondir, "shallow");
	ret = p.buf ? file_read(p.buf, (size_t)1 << 30, out) :
		err_set(XL_ENOMEM, "out of memory");
	buf_release(&p);
	return ret;
}

int repo_shallow_count(const struct repo *repo, uint64_t *out)
{
	struct buf text = BUF_INIT;
	int ret = repo_shallow_read(repo, &text);

	*out = 0;
	if (ret == XL_ENOTFOUND) {
		err_clear();
		ret = 0;
	}
	for (size_t i = 0; !ret && i < text.len; i++)
		if (text.buf[i] == '\n' || (i + 1 == text.len))
			(*out)++;
	buf_release(&text);
	return ret;
}

struct odb *repo_odb(struct repo *repo)
{
	return repo->odb;
}
