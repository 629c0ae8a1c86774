import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.util.List;

/**
 * Defines patched DynamoDB Local classes in the server's class loader, before anything loads the
 * originals, through the JDK's supported way to add a class to a package (MethodHandles.Lookup
 * defineClass, with the access a class of that package lends). Every class of a set is verified in
 * a throwaway loader first: a class failing verification in the server's loader would break the
 * server, so a set that does not verify leaves every class of it as shipped.
 */
final class PatchedClasses {
  private PatchedClasses() {}

  /**
   * Verifies every patched class, then defines each with the access of `lenders` (a class of the
   * same package for each, in order: loaded, not initialized, and not one of those patched).
   */
  static void define(ClassLoader loader, List<ClassPatch> patches, List<String> lenders) throws Exception {
    for (ClassPatch patch : patches) new TrialLoader(loader, patch.name, patch.bytes()).verify();
    for (int i = 0; i < patches.size(); i++) {
      ClassPatch patch = patches.get(i);
      String lenderName = lenders.get(i);
      if (!packageOf(lenderName).equals(packageOf(patch.name)))
        throw new IllegalStateException(patch.name + ": " + lenderName + " is of another package");
      Class<?> lender = Class.forName(lenderName, false, loader);
      Class<?> defined = MethodHandles.privateLookupIn(lender, MethodHandles.lookup()).defineClass(patch.bytes());
      if (Class.forName(patch.name, false, loader) != defined)
        throw new IllegalStateException(patch.name + ": another definition won");
    }
  }

  /** One patched class, lent the access of its superclass (loaded anyway, before it). */
  static void define(ClassLoader loader, ClassPatch patch) throws Exception {
    define(loader, List.of(patch), List.of(patch.superclass()));
  }

  private static String packageOf(String name) {
    return name.substring(0, name.lastIndexOf('.'));
  }

  /**
   * A throwaway loader to link (and so verify) a patched class before the server's own loader defines
   * it. It defines the patched class and, from the server's own class files, the rest of its package
   * (package-private access needs one loader); anything else comes from the server's loader.
   */
  static final class TrialLoader extends ClassLoader {
    private final String name;
    private final byte[] bytes;
    private final String pkg;

    TrialLoader(ClassLoader parent, String name, byte[] bytes) {
      super(parent);
      this.name = name;
      this.bytes = bytes;
      this.pkg = packageOf(name) + ".";
    }

    @Override
    protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(n)) {
        Class<?> c = findLoadedClass(n);
        if (c == null && n.startsWith(pkg) && n.indexOf('.', pkg.length()) < 0) {
          byte[] b = bytes;
          if (!n.equals(name)) {
            try {
              b = ClassPatch.classBytes(getParent(), n);
            } catch (IOException | IllegalStateException e) {
              throw new ClassNotFoundException(n, e);
            }
          }
          c = defineClass(n, b, 0, b.length);
        }
        if (c == null) return super.loadClass(n, resolve);
        if (resolve) resolveClass(c);
        return c;
      }
    }

    /** Links the patched class, which verifies it: a VerifyError or a linkage error throws here. */
    void verify() throws ClassNotFoundException {
      Class.forName(name, true, this);
    }
  }
}
