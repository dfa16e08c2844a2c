// Walk.java GITDIR: walk HEAD's history with JGit.
//
// Prints the format described in walk-git.sh: every commit reachable from
// HEAD, every tree of those commits with its entries, every blob with the
// size of its content (read in full, as a stream), then trees/blobs/commits
// counts.  Built and run by run.sh against Debian's libjgit-java.

import java.io.File;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.eclipse.jgit.lib.Constants;
import org.eclipse.jgit.lib.FileMode;
import org.eclipse.jgit.lib.ObjectId;
import org.eclipse.jgit.lib.ObjectReader;
import org.eclipse.jgit.lib.Repository;
import org.eclipse.jgit.revwalk.RevCommit;
import org.eclipse.jgit.revwalk.RevWalk;
import org.eclipse.jgit.storage.file.FileRepositoryBuilder;
import org.eclipse.jgit.treewalk.TreeWalk;

public class Walk {
	static String quote(byte[] name) {
		StringBuilder sb = new StringBuilder();
		for (byte x : name) {
			int b = x & 0xff;
			if (b == 0x5c)
				sb.append("\\\\");
			else if (b >= 0x20 && b <= 0x7e)
				sb.append((char) b);
			else
				sb.append(String.format("\\x%02x", b));
		}
		return sb.toString();
	}

	static int compareBytes(byte[] a, byte[] b) {
		int n = Math.min(a.length, b.length);
		for (int i = 0; i < n; i++) {
			int d = (a[i] & 0xff) - (b[i] & 0xff);
			if (d != 0)
				return d;
		}
		return a.length - b.length;
	}

	static final class Entry {
		final byte[] name;
		final String line;

		Entry(byte[] name, String line) {
			this.name = name;
			this.line = line;
		}
	}

	public static void main(String[] args) throws Exception {
		if (args.length != 1) {
			System.err.println("usage: Walk GITDIR");
			System.exit(2);
		}
		Repository repo = new FileRepositoryBuilder().setGitDir(new File(args[0]))
				.setMustExist(true).build();
		ObjectId head = repo.resolve(Constants.HEAD + "^{commit}");
		if (head == null)
			throw new Exception("HEAD does not name a commit");

		Map<String, String> commits = new TreeMap<>();
		List<ObjectId> roots = new ArrayList<>();
		try (RevWalk rw = new RevWalk(repo)) {
			rw.markStart(rw.parseCommit(head));
			for (RevCommit c : rw) { // every parent, not only the first
				StringBuilder p = new StringBuilder();
				for (RevCommit q : c.getParents()) {
					if (p.length() > 0)
						p.append(',');
					p.append(q.name());
				}
				commits.put(c.name(), "commit " + c.name() + " tree " + c.getTree().name()
						+ " parents " + (p.length() > 0 ? p : "-"));
				roots.add(c.getTree().copy());
			}
		}

		Map<String, List<Entry>> trees = new TreeMap<>();
		Map<String, Long> blobs = new TreeMap<>();
		byte[] buf = new byte[65536];
		try (ObjectReader reader = repo.newObjectReader()) {
			ArrayDeque<ObjectId> todo = new ArrayDeque<>(roots);
			while (!todo.isEmpty()) {
				ObjectId t = todo.pop();
				if (trees.containsKey(t.name()))
					continue;
				List<Entry> entries = new ArrayList<>();
				try (TreeWalk tw = new TreeWalk(reader)) {
					tw.addTree(t);
					tw.setRecursive(false);
					while (tw.next()) {
						int mode = tw.getRawMode(0);
						ObjectId id = tw.getObjectId(0);
						String kind;
						if ((mode & FileMode.TYPE_MASK) == FileMode.TYPE_TREE) {
							kind = "tree";
							todo.push(id);
						} else if ((mode & FileMode.TYPE_MASK) == FileMode.TYPE_GITLINK) {
							kind = "commit";
						} else {
							kind = "blob";
							if (!blobs.containsKey(id.name())) {
								long n = 0;
								try (InputStream in = reader.open(id, Constants.OBJ_BLOB).openStream()) {
									for (int r; (r = in.read(buf)) > 0;)
										n += r;
								}
								blobs.put(id.name(), n);
							}
						}
						byte[] name = tw.getRawPath();
						entries.add(new Entry(name, String.format("  %06o %s %s %s", mode, kind,
								id.name(), quote(name))));
					}
				}
				entries.sort((a, b) -> compareBytes(a.name, b.name));
				trees.put(t.name(), entries);
			}
		}
		repo.close();

		PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.US_ASCII));
		for (String line : commits.values())
			out.print(line + "\n");
		for (Map.Entry<String, List<Entry>> t : trees.entrySet()) {
			out.print("tree " + t.getKey() + "\n");
			for (Entry e : t.getValue())
				out.print(e.line + "\n");
		}
		for (Map.Entry<String, Long> b : blobs.entrySet())
			out.print("blob " + b.getKey() + " size " + b.getValue() + "\n");
		out.print("trees " + trees.size() + "\n");
		out.print("blobs " + blobs.size() + "\n");
		out.print("commits " + commits.size() + "\n");
		out.flush();
		if (out.checkError())
			System.exit(1);
	}
}
