import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One class file of DynamoDB Local, changed in place of one instruction sequence at a time, with the
 * method references that needs appended to its constant pool. Each change finds its sequence exactly
 * once in the bytes after the pool (or throws) and keeps the operand stack as it was, so no stack map
 * changes. Used only where DynamoDB Local offers no setting, hook or subclass for what a patch
 * changes; PatchedClasses verifies and defines the result.
 */
final class ClassPatch {
  final String name;
  private final byte[] cls;
  private final ByteBuffer b;
  private final int count;
  private final int poolEnd;
  private final String[] utf8;
  private final int[] tag;
  private final int[] first;
  private final int[] second;
  private final ByteArrayOutputStream added = new ByteArrayOutputStream();
  private int next;
  private final byte[] body;

  /** The class `name` (binary name) as `loader` would load it. */
  ClassPatch(ClassLoader loader, String name) throws IOException {
    this(name, classBytes(loader, name));
  }

  ClassPatch(String name, byte[] cls) {
    this.name = name;
    this.cls = cls;
    b = ByteBuffer.wrap(cls);
    if (b.getInt(0) != 0xCAFEBABE) throw new IllegalStateException(name + " is not a class file");
    count = b.getShort(8) & 0xffff;
    next = count;
    utf8 = new String[count];
    tag = new int[count];
    first = new int[count];
    second = new int[count];
    int pos = 10;
    for (int i = 1; i < count; i++) {
      tag[i] = cls[pos] & 0xff;
      switch (tag[i]) {
        case 1 -> {
          int len = b.getShort(pos + 1) & 0xffff;
          utf8[i] = new String(cls, pos + 3, len, StandardCharsets.UTF_8);
          pos += 3 + len;
        }
        case 3, 4 -> pos += 5;
        case 5, 6 -> {
          pos += 9;
          i++;
        }
        case 7, 8, 16, 19, 20 -> {
          first[i] = b.getShort(pos + 1) & 0xffff;
          pos += 3;
        }
        case 9, 10, 11, 12, 17, 18 -> {
          first[i] = b.getShort(pos + 1) & 0xffff;
          second[i] = b.getShort(pos + 3) & 0xffff;
          pos += 5;
        }
        case 15 -> pos += 4;
        default -> throw new IllegalStateException("unknown constant tag " + tag[i]);
      }
    }
    poolEnd = pos;
    body = Arrays.copyOfRange(cls, pos, cls.length);
  }

  static byte[] classBytes(ClassLoader loader, String name) throws IOException {
    try (InputStream in = loader.getResourceAsStream(name.replace('.', '/') + ".class")) {
      if (in == null) throw new IllegalStateException(name + " not found");
      return in.readAllBytes();
    }
  }

  /** `invokevirtual owner.name desc` becomes `invokestatic newOwner.newName newDesc` (receiver first). */
  void redirectCall(String owner, String name, String desc, String newOwner, String newName, String newDesc) {
    int ref = methodRef(owner, name, desc);
    int at = findOnce(new byte[] {(byte) 0xb6, (byte) (ref >> 8), (byte) ref}, owner + "." + name);
    put(at, (byte) 0xb8, addMethodRef(newOwner, newName, newDesc));
  }

  /** `new type; dup; invokespecial type.<init>()V` becomes `invokestatic newOwner.newName()type` and nops. */
  void replaceConstruction(String type, String newOwner, String newName) {
    int classRef = 0;
    for (int i = 1; i < count; i++) if (tag[i] == 7 && type.equals(utf8[first[i]])) classRef = i;
    if (classRef == 0) throw new IllegalStateException("no reference to " + type);
    int init = methodRef(type, "<init>", "()V");
    int at = findOnce(new byte[] {(byte) 0xbb, (byte) (classRef >> 8), (byte) classRef, 0x59,
        (byte) 0xb7, (byte) (init >> 8), (byte) init}, "new " + type);
    put(at, (byte) 0xb8, addMethodRef(newOwner, newName, "()L" + type + ";"));
    Arrays.fill(body, at + 3, at + 7, (byte) 0); // nop
  }

  /** The superclass's binary name (super_class follows access_flags and this_class). */
  String superclass() {
    return utf8[first[b.getShort(poolEnd + 4) & 0xffff]].replace('/', '.');
  }

  byte[] bytes() {
    byte[] extra = added.toByteArray();
    return ByteBuffer.allocate(cls.length + extra.length)
        .put(cls, 0, 8).putShort((short) next).put(cls, 10, poolEnd - 10).put(extra).put(body)
        .array();
  }

  private int methodRef(String owner, String name, String desc) {
    for (int i = 1; i < count; i++) {
      if (tag[i] != 10) continue;
      int nat = second[i];
      if (owner.equals(utf8[first[first[i]]]) && name.equals(utf8[first[nat]]) && desc.equals(utf8[second[nat]])) return i;
    }
    throw new IllegalStateException("no reference to " + owner + "." + name + desc);
  }

  private int findOnce(byte[] pattern, String what) {
    int at = -1;
    outer:
    for (int p = 0; p + pattern.length <= body.length; p++) {
      for (int k = 0; k < pattern.length; k++) if (body[p + k] != pattern[k]) continue outer;
      if (at >= 0) throw new IllegalStateException(what + " occurs more than once in " + name);
      at = p;
    }
    if (at < 0) throw new IllegalStateException(what + " does not occur in " + name);
    return at;
  }

  private void put(int at, byte opcode, int ref) {
    body[at] = opcode;
    body[at + 1] = (byte) (ref >> 8);
    body[at + 2] = (byte) ref;
  }

  /** Appends Utf8 owner, Class, Utf8 name, Utf8 desc, NameAndType, Methodref; returns the Methodref. */
  private int addMethodRef(String owner, String name, String desc) {
    DataOutputStream out = new DataOutputStream(added);
    int base = next;
    try {
      out.writeByte(1);
      out.writeUTF(owner);
      out.writeByte(7);
      out.writeShort(base);
      out.writeByte(1);
      out.writeUTF(name);
      out.writeByte(1);
      out.writeUTF(desc);
      out.writeByte(12);
      out.writeShort(base + 2);
      out.writeShort(base + 3);
      out.writeByte(10);
      out.writeShort(base + 1);
      out.writeShort(base + 4);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    next = base + 6;
    if (next > 0xffff) throw new IllegalStateException("constant pool full");
    return base + 5;
  }
}
