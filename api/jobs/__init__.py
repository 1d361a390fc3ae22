"""What the job endpoints do apart from HTTP, for jobs and one-off runs alike: validate a
request, write its rows first and then send the run, read and list runs."""
