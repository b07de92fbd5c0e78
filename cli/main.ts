console.log("hello", process.argv.slice(2));
