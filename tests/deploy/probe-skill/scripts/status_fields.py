# The fields of /proc/self/status the deploy tests judge, beside status.py: the sibling
# import a Python skill laid out like the public repositories' makes.
WANTED = ('Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb',
          'NoNewPrivs', 'Seccomp')


def read_status(path='/proc/self/status'):
    status = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(':')
            if name in WANTED:
                status[name] = value.split()
    return status
